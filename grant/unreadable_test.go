package grant_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
)

// A grants file that is a FIFO, or a link (to /dev/zero, say), is a
// *CorruptError naming the file, returned at once.
func TestOpenRefusesUnreadable(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(p string) error
		want string
	}{
		"fifo":     {func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file (a named pipe)"},
		"dev-zero": {func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a symbolic link)"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "run1.json")
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := grant.Open(p); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open still blocked after 5s")
			}
			var ce *grant.CorruptError
			if !errors.As(err, &ce) || ce.Path != p {
				t.Fatalf("Open = %v, want a *grant.CorruptError for %s", err, p)
			}
			if want := p + ": " + tc.want; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}
