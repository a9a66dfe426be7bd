//go:build !linux

package pipes

import (
	"io"
	"os"
)

// Grow does nothing outside Linux: macOS has no F_SETPIPE_SZ, and its
// pipes grow to 64 KiB by themselves under load; large results cross them
// in more wake-ups.
func Grow(*os.File) {}

// PollableReader returns r: outside Linux a pipe is not opened anew.
func PollableReader(r io.Reader) io.ReadCloser { return io.NopCloser(r) }

// PollableWriter returns nil: outside Linux a pipe is not opened anew.
func PollableWriter(*os.File) *os.File { return nil }
