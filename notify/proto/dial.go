package proto

import (
	"fmt"
	"os"
	"syscall"
)

// dialUnix connects a unix stream socket to path and returns it as a
// non-blocking *os.File, which the runtime's poller serves (deadlines,
// reads and writes that wait without a thread), as package net would.
// It does without package net, whose resolver links the C library when
// cgo is on: the front (cmd/mcpepoch) dials hosts and must stay a static
// binary that starts fast. A unix socket's connect does not wait for the
// host to accept: it succeeds, or fails at once (ENOENT, ECONNREFUSED,
// EAGAIN when the host's backlog is full). The error reads as net's:
// "dial unix PATH: connect: …", with the errno for errors.Is.
func dialUnix(path string) (*os.File, error) {
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, dialError(path, os.NewSyscallError("socket", err))
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, dialError(path, os.NewSyscallError("setnonblock", err))
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, dialError(path, os.NewSyscallError("connect", err))
	}
	return os.NewFile(uintptr(fd), path), nil
}

func dialError(path string, err error) error {
	return fmt.Errorf("dial unix %s: %w", path, err)
}
