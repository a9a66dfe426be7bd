package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A mcpepoch.toml that is a FIFO, a link to /dev/zero or over MaxSize is an
// *Error naming the file, returned at once.
func TestLoadRefusesUnreadable(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(p string) error
		want string
	}{
		"fifo":      {func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file (a named pipe)"},
		"dev-zero":  {func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a character device)"},
		"directory": {func(p string) error { return os.Mkdir(p, 0o700) }, "not a regular file (a directory)"},
		"too-large": {func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("#", MaxSize+1)), 0o600)
		}, "larger than the 1 MiB limit for this file"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, FileName)
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := Load(dir); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Load still blocked after 5s")
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Path != p {
				t.Fatalf("Load = %v, want an *Error for %s", err, p)
			}
			if want := p + ": " + tc.want; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}
