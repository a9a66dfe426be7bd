//go:build unix

package manifest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// Lock takes the exclusive advisory lock (flock) that serializes manifest
// writers in project root, creating root/.mcpepoch (mode 0700) if needed. It
// blocks until the lock is free; the returned function releases it. The lock
// is released by the kernel if the process dies.
func Lock(root string) (unlock func(), err error) {
	if err := layout.MkdirAll(layout.Dir(root)); err != nil {
		return nil, err
	}
	p := layout.ManifestLock(root)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
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
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}
