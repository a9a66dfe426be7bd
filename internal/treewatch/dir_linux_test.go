package treewatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The directory watch behind the manifest watch reports an entry made,
// replaced or written and closed, and the directory's own removal, but not
// the writes to files kept open in it: the audit log and its head, written
// on every call, wake no watcher.
func TestDirWatchSkipsWritesToOpenFiles(t *testing.T) {
	dir := t.TempDir()
	log, err := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, gone := make(chan string, 1024), make(chan struct{})
	if err := WatchDir(ctx, dir, func(p string) { events <- p }, func() { close(gone) }, t.Logf); err != nil {
		t.Fatal(err)
	}
	next := func(want string) {
		t.Helper()
		select {
		case p := <-events:
			if p != want {
				t.Fatalf("event for %q, want %q first", p, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no event for %q", want)
		}
		for len(events) > 0 && len(events) < cap(events) {
			if p := <-events; p != want {
				t.Fatalf("event for %q after %q's", p, want)
			}
		}
	}
	for range 100 {
		if _, err := log.Write([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "manifest.toml")
	tmp := filepath.Join(dir, "manifest.toml.tmp")
	if err := os.WriteFile(tmp, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next(tmp)
	if err := os.Rename(tmp, manifest); err != nil {
		t.Fatal(err)
	}
	// The rename is reported for both names; the one that matters last.
	for p := range events {
		if p == manifest {
			break
		}
		if p != tmp {
			t.Fatalf("event for %q, want %q", p, manifest)
		}
	}
	if _, err := log.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(manifest, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("b\n"))
	f.Close() // edited in place: reported once closed
	next(manifest)
	log.Close()
	os.RemoveAll(dir)
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the directory's removal was not reported")
	}
}
