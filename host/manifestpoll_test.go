package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The manifest watch's fallback, where file events cannot be had, pokes
// for a manifest replaced by a rename even when the new one has the old
// one's size and mtime: the inode tells them apart.
func TestPollFileSeesReplacement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.toml")
	if err := os.WriteFile(path, []byte("build A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pokes := make(chan struct{}, 16)
	go pollFile(ctx, path, func() { pokes <- struct{}{} })
	time.Sleep(manifestPoll / 2) // the first stamp is taken

	next := filepath.Join(dir, "next")
	if err := os.WriteFile(next, []byte("build B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(next, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pokes:
	case <-time.After(10 * manifestPoll):
		t.Fatal("no poke for a manifest replaced with the same size and mtime")
	}
}
