//go:build unix

package audit

import (
	"os"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/flock"
)

// lockFile takes flock(2) on f, exclusive or shared, waiting at most
// timeout. The lock belongs to f's open file description: two opens of
// the same file, even in one process, exclude each other.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	return flock.File(f, exclusive, timeout)
}

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) error { return flock.Unlock(f) }
