package project

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A .go file that is a FIFO or a link to /dev/zero does not hang or
// exhaust the search for package main: it is skipped.
func TestHasPackageMainUnreadable(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"fifo":     func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"dev-zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := mk(filepath.Join(dir, "a.go")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan bool, 1)
			go func() { done <- hasPackageMain(dir) }()
			select {
			case got := <-done:
				if !got {
					t.Error("hasPackageMain = false, want true (main.go)")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("hasPackageMain still blocked after 5s")
			}
		})
	}
}
