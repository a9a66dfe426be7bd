package pipes

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is the buffer the host asks for on the pipes that carry
// results (the server's stdout and the client's stdin, which is the
// host's stdout): a 1 MiB result then crosses each pipe in one or two
// wake-ups instead of sixteen (a Go relay on 64 KiB pipes takes ~6× as
// long per MiB). Linux charges pipe buffers to the user
// (/proc/sys/fs/pipe-user-pages-soft, 64 MiB by default): two pipes of
// 1 MiB per host.
const pipeSize = 1 << 20

// Grow raises the buffer of the pipe f to pipeSize
// (fcntl F_SETPIPE_SZ), or leaves it as it is when f is not a pipe or the
// size is not allowed (/proc/sys/fs/pipe-max-size): only speed depends on
// it. The descriptor keeps its mode (File.Fd would make it blocking).
func Grow(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && n < pipeSize {
			unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
		}
	})
}

// PollableReader returns a reader of the pipe r (the client's stdin)
// that waits in the runtime's poller: the pipe opened anew through
// /proc/self/fd, non-blocking, a descriptor of the host's own, so that the
// mode of the one it was given, shared with whoever opened it, is left
// alone. A read that blocks in the kernel instead ties up a thread, and
// the runtime's monitor then wakes every 20 µs to hand its processor on.
// For anything but a pipe, or when it cannot be opened again, r itself;
// closing the reader returned closes only what this opened.
func PollableReader(r io.Reader) io.ReadCloser {
	if f, ok := r.(*os.File); ok {
		if own := ownPipe(f, unix.O_RDONLY); own != nil {
			return own
		}
	}
	return io.NopCloser(r)
}

// PollableWriter returns the pipe f (the host's stdout, the client's
// stdin) opened anew for writing as PollableReader opens the client's
// stdin, or nil for anything but a blocking pipe or when it cannot be
// opened again. The host writes an answer on its own non-blocking
// descriptor at once, however long, as far as the pipe takes it, with no
// poll(2) before; what is left waits in the runtime's poller, not in a
// thread blocked in the kernel. The caller closes it.
func PollableWriter(f *os.File) *os.File { return ownPipe(f, unix.O_WRONLY) }

// ownPipe opens the blocking pipe f anew through /proc/self/fd with mode
// (O_RDONLY or O_WRONLY), non-blocking and close-on-exec: a descriptor of
// the host's own, checked to be the same pipe. It returns nil when f is
// not a pipe, is non-blocking already (in the poller), or cannot be
// opened again.
func ownPipe(f *os.File, mode int) *os.File {
	var st unix.Stat_t
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fifo := false
	rc.Control(func(fd uintptr) {
		fifo = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
		if fifo {
			if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
				fifo = false // in the poller already, or unusable
			}
		}
	})
	if !fifo {
		return nil
	}
	var own *os.File
	rc.Control(func(fd uintptr) {
		nfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), mode|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var nst unix.Stat_t
		if unix.Fstat(nfd, &nst) != nil || nst.Dev != st.Dev || nst.Ino != st.Ino {
			unix.Close(nfd) // not the same pipe
			return
		}
		own = os.NewFile(uintptr(nfd), f.Name())
	})
	return own
}
