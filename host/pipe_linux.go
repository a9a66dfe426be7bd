package host

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

// growPipe raises the buffer of the pipe f to pipeSize
// (fcntl F_SETPIPE_SZ), or leaves it as it is when f is not a pipe or the
// size is not allowed (/proc/sys/fs/pipe-max-size): only speed depends on
// it. The descriptor keeps its mode (File.Fd would make it blocking).
func growPipe(f *os.File) {
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

// pollableReader returns a reader of the pipe r (the client's stdin)
// that waits in the runtime's poller: the pipe opened anew through
// /proc/self/fd, non-blocking, a descriptor of the host's own, so that the
// mode of the one it was given, shared with whoever opened it, is left
// alone. A read that blocks in the kernel instead ties up a thread, and
// the runtime's monitor then wakes every 20 µs to hand its processor on.
// For anything but a pipe, or when it cannot be opened again, r itself;
// closing the reader returned closes only what this opened.
func pollableReader(r io.Reader) io.ReadCloser {
	f, ok := r.(*os.File)
	if !ok {
		return io.NopCloser(r)
	}
	var st unix.Stat_t
	rc, err := f.SyscallConn()
	if err != nil {
		return io.NopCloser(r)
	}
	fifo := false
	rc.Control(func(fd uintptr) {
		fifo = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
		if fifo {
			if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
				fifo = false // in the poller already, or unreadable
			}
		}
	})
	if !fifo {
		return io.NopCloser(r)
	}
	var own *os.File
	rc.Control(func(fd uintptr) {
		nfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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
	if own == nil {
		return io.NopCloser(r)
	}
	return own
}
