//go:build !linux

package host

import (
	"io"
	"os"
)

// growPipe does nothing outside Linux: macOS has no F_SETPIPE_SZ, and its
// pipes grow to 64 KiB by themselves under load; large results cross them
// in more wake-ups.
func growPipe(*os.File) {}

// pollableReader returns r: outside Linux a pipe is not opened anew.
func pollableReader(r io.Reader) io.ReadCloser { return io.NopCloser(r) }

// pollableWriter returns nil: outside Linux a pipe is not opened anew.
func pollableWriter(*os.File) *os.File { return nil }
