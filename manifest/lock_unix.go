//go:build unix

package manifest

import (
	"github.com/mcpepoch/mcpepoch/internal/flock"
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
	return flock.Lock(layout.ManifestLock(root))
}
