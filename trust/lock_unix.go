//go:build unix

package trust

import (
	"os"

	"golang.org/x/sys/unix"
)

// lock takes flock(2) on the file at path (created 0600), waiting as long
// as it takes, and returns its release. Two processes updating the store
// take turns.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
