//go:build !unix

package audit

import (
	"os"
	"time"
)

// lockFile does nothing: this platform has no flock(2). A Log still orders
// its own appends (Log.mu), but two processes appending to one log are not
// ordered and may break its chain, which Verify reports.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error { return nil }

// unlockFile does nothing; see lockFile.
func unlockFile(f *os.File) error { return nil }
