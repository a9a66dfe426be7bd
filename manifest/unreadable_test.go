package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A manifest that is a FIFO, a device, a symbolic link or over MaxSize is a
// *CorruptError naming the file, returned at once: Read never blocks, and
// never reads more than MaxSize+1 bytes.
func TestReadRefusesUnreadable(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(p string) error
		want string
	}{
		"fifo":      {func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file (a named pipe)"},
		"dev-zero":  {func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a symbolic link)"},
		"directory": {func(p string) error { return os.Mkdir(p, 0o700) }, "not a regular file (a directory)"},
		"too-large": {func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("#", MaxSize+1)), 0o600)
		}, "larger than the 4 MiB limit for this file"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "manifest.toml")
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := Read(p); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Read still blocked after 5s")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != p || IsNotExist(err) {
				t.Fatalf("Read = %v, want a *CorruptError for %s", err, p)
			}
			if want := p + ": " + tc.want; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
	// /dev/zero itself, not through a link.
	if _, err := Read("/dev/zero"); err == nil || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("Read(/dev/zero) = %v", err)
	}
}
