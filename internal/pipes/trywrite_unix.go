package pipes

import (
	"os"

	"golang.org/x/sys/unix"
)

// Atomic is PIPE_BUF on Linux and macOS: a write of at most this many
// bytes to a pipe that polls writable completes without blocking (one free
// buffer slot holds it).
const Atomic = 4096

// TryWriter returns a write that never blocks for the pipe f, or nil when
// f is not a pipe. On a non-blocking descriptor (the server's stdin) any
// line is written as far as the pipe takes it; on a blocking one (the
// host's own stdout, as the client opened it) only a line of at most
// Atomic bytes, and only when poll says the pipe has room. The rest,
// and any error, is left to the writer goroutine, which reports errors.
func TryWriter(f *os.File) func([]byte) ([]byte, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var fifo bool
	rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		fifo = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
	})
	if !fifo {
		return nil
	}
	return func(line []byte) ([]byte, bool) {
		n := 0
		rc.Write(func(fd uintptr) bool {
			// The mode is read each time: File.Fd, anywhere, makes a
			// descriptor blocking.
			fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
			if err != nil {
				return true
			}
			if fl&unix.O_NONBLOCK == 0 {
				if len(line) > Atomic {
					return true
				}
				p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
				if k, err := unix.Poll(p, 0); err != nil || k != 1 || p[0].Revents&unix.POLLOUT == 0 {
					return true
				}
			}
			if k, err := unix.Write(int(fd), line); err == nil {
				n = k
			}
			return true // never wait: the writer goroutine does
		})
		return line[n:], n == len(line)
	}
}

// TryWriterV returns TryWriter's write for several lines at once, one
// writev(2) of them all: it returns how many bytes were written (0 when
// the pipe had no room or on an error, which the writer goroutine then
// meets and reports). On a blocking descriptor it writes only when the
// lines together are at most Atomic bytes; nil when f is not a pipe.
//
// The mode is read once, here, when own says the host made the pipe and
// alone holds this end of it (the server's stdin: nothing else can change
// its mode, and nothing in the host calls File.Fd on it, which would make
// it blocking), or when the descriptor is blocking (the host's stdout as
// a client opens it): a blocking descriptor's write path, poll first and
// at most Atomic bytes, never blocks on a non-blocking one either, so
// whoever shares it may change its mode. Only a shared non-blocking
// descriptor has its mode read before every write, as it may turn
// blocking.
func TryWriterV(f *os.File, own bool) func(bufs [][]byte) int {
	rc, err := f.SyscallConn()
	if err != nil || TryWriter(f) == nil {
		return nil
	}
	fixed := -1 // the descriptor's flags, when read once
	rc.Control(func(fd uintptr) {
		if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil && (own || fl&unix.O_NONBLOCK == 0) {
			fixed = fl
		}
	})
	return func(bufs [][]byte) int {
		n := 0
		rc.Write(func(fd uintptr) bool {
			fl := fixed
			if fl < 0 {
				var err error
				if fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil {
					return true
				}
			}
			if fl&unix.O_NONBLOCK == 0 {
				total := 0
				for _, b := range bufs {
					total += len(b)
				}
				if total > Atomic {
					return true
				}
				p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
				if k, err := unix.Poll(p, 0); err != nil || k != 1 || p[0].Revents&unix.POLLOUT == 0 {
					return true
				}
			}
			var k int
			var err error
			if len(bufs) == 1 {
				k, err = unix.Write(int(fd), bufs[0])
			} else {
				k, err = unix.Writev(int(fd), bufs[:min(len(bufs), MaxIovecs)])
			}
			if err == nil {
				n = k
			}
			return true // never wait: the writer goroutine does
		})
		return n
	}
}

// MaxIovecs bounds the lines of one writev(2) (IOV_MAX is 1024 on Linux
// and macOS).
const MaxIovecs = 1024
