package host

import (
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
