//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris

package audit

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes flock(2) on f, exclusive or shared, waiting at most
// timeout (polling, as flock has no timeout of its own). The lock belongs
// to f's open file description: two opens of the same file, even in one
// process, exclude each other.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Microsecond
	for {
		err := control(f, func(fd int) error {
			for {
				if err := unix.Flock(fd, how|unix.LOCK_NB); err != unix.EINTR {
					return err
				}
			}
		})
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

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) error {
	return control(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_UN) })
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
