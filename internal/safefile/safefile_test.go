package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// within runs fn and fails the test if it has not returned after d: a
// blocked open must show up as a failure, not as a hung test binary.
func within(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
		return nil
	}
}

func TestReadFileRefusesWhatIsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, kind string }{
		{"fifo", fifo, "a named pipe"},
		{"link-to-dev-zero", zero, "a character device"},
		{"dev-zero", "/dev/zero", "a character device"},
		{"directory", dir, "a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, read := range []func(string, int64) ([]byte, error){safefile.ReadFile, safefile.ReadFileNoFollow} {
				err := within(t, 5*time.Second, func() error { _, err := read(tc.path, 1<<20); return err })
				if tc.name == "link-to-dev-zero" && err != nil && strings.Contains(err.Error(), "symbolic link") {
					continue // ReadFileNoFollow refuses the link itself
				}
				var nr *safefile.NotRegularError
				if !errors.As(err, &nr) || safefile.Refusal(err) != nr {
					t.Fatalf("err = %v, want a *NotRegularError for %s", err, tc.path)
				}
				if want := "open " + tc.path + ": not a regular file (" + tc.kind + ")"; err.Error() != want {
					t.Errorf("err = %q, want %q", err, want)
				}
			}
		})
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := safefile.ReadFile(p, 1024)
	if err != nil || len(b) != 1024 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err = safefile.ReadFile(p, 1023)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1023 || safefile.Refusal(err) != tl {
		t.Fatalf("over the limit: err = %v, want a *TooLargeError", err)
	}
	if want := "read " + p + ": larger than the 1023 bytes limit for this file"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if _, err := safefile.ReadFile(p, 512); err == nil || !strings.Contains(err.Error(), "the 512 bytes limit") {
		t.Errorf("err = %v", err)
	}
}

// A file whose size says 0 (as files in /proc do) is still cut at the limit.
func TestReadFileLimitWithoutSize(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status on this system")
	}
	_, err := safefile.ReadFile("/proc/self/status", 16)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("err = %v, want a *TooLargeError", err)
	}
}

func TestOpenMissingAndLinks(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := safefile.ReadFile(missing, 10); !errors.Is(err, fs.ErrNotExist) || safefile.Refusal(err) != nil {
		t.Errorf("missing: err = %v, want fs.ErrNotExist", err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if b, err := safefile.ReadFile(link, 10); err != nil || string(b) != "ok" {
		t.Errorf("ReadFile through a link: %q, %v", b, err)
	}
	_, err := safefile.ReadFileNoFollow(link, 10)
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) || nr.Mode != fs.ModeSymlink || err.Error() != "open "+link+": not a regular file (a symbolic link)" {
		t.Errorf("ReadFileNoFollow of a link: err = %v, want a *NotRegularError", err)
	}
	f, err := safefile.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4)
	if n, err := f.Read(buf); err != nil || string(buf[:n]) != "ok" {
		t.Errorf("read %q, %v", buf[:n], err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 16 << 20: "16 MiB", 512 << 10: "512 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := safefile.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
