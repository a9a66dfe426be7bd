//go:build !unix

package trust

import "errors"

// lock refuses: without flock(2) two processes could both accept one
// signature counter, so the store is not written on this platform.
func lock(path string) (func(), error) {
	return nil, errors.New("no file locking on this platform")
}
