//go:build unix

// Package flock takes advisory file locks with flock(2): blocking, or
// polling with a timeout. A lock belongs to the open file description, so
// two opens of one file exclude each other even in one process, and the
// kernel releases it when the process dies.
package flock

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock opens the file at path (created with mode 0600) and takes its
// exclusive lock, waiting as long as it takes; unlock releases the lock
// and closes the file. An error opening the file is os.OpenFile's; one
// from flock is "lock PATH: …".
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	err = control(f, func(fd int) error { return retry(fd, unix.LOCK_EX) })
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { Unlock(f); f.Close() }, nil
}

// File takes the lock of f, exclusive or shared, waiting at most timeout
// (polling, as flock has no timeout of its own). The error after timeout
// says it is held by another writer and wraps EWOULDBLOCK.
func File(f *os.File, exclusive bool, timeout time.Duration) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Microsecond
	for {
		err := control(f, func(fd int) error { return retry(fd, how|unix.LOCK_NB) })
		if err != unix.EWOULDBLOCK {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another writer for more than %v: %w", timeout, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// Unlock releases the lock File or Lock took on f.
func Unlock(f *os.File) error {
	return control(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_UN) })
}

// Supported reports whether this platform has flock(2).
const Supported = true

// retry calls flock until a signal does not interrupt it.
func retry(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
