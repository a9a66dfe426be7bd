//go:build !linux

package audit

import "os"

// fdatasync flushes f to stable storage: fsync (on macOS, F_FULLFSYNC)
// where there is no fdatasync of its own.
func fdatasync(f *os.File) error { return f.Sync() }
