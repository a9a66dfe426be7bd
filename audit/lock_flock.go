//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris

package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes flock(2) on f, exclusive or shared, waiting as long as it
// takes. The lock belongs to f's open file description: two opens of the
// same file, even in one process, exclude each other.
func lockFile(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return control(f, func(fd int) error {
		for {
			if err := unix.Flock(fd, how); err != unix.EINTR {
				return err
			}
		}
	})
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
