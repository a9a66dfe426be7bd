//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLockExcludes: a file held by Lock cannot be taken by File through
// another open file description until it is released.
func TestLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := File(f, false, 20*time.Millisecond); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("File while locked: %v, want EWOULDBLOCK after the timeout", err)
	}
	unlock()
	if err := File(f, false, time.Second); err != nil {
		t.Fatalf("File after unlock: %v", err)
	}
	Unlock(f)
	if _, err := Lock(filepath.Join(p, "no", "such")); err == nil {
		t.Fatal("Lock under a file succeeded")
	}
}
