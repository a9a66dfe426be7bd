package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.toml")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("content = %q, %v; want new", b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(ents))
	}
}

func TestWriteMissingDirKeepsNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "f")
	if err := Write(p, []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestReplaceReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.toml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("content = %q, %v; want new", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(ents))
	}
}

func TestReplaceFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.toml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename: the write fails after the
	// temporary file is written, and the temporary file goes.
	q := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(q, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Replace(q, []byte("new"), 0o600); err == nil {
		t.Fatal("Replace over a non-empty directory succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("content = %q, want old", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory holds %d entries, want the file and sub (no temporary file)", len(ents))
	}
}

// TestPublishVisibleBeforeSync: Publish puts the new content in place, by
// rename (another inode; a reader of the old file keeps the old bytes),
// before its sync is called, and leaves no temporary file behind.
func TestPublishVisibleBeforeSync(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.toml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	sync, err := Publish(p, []byte("new"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("content before sync = %q, %v; want new", b, err)
	}
	if b, _ := io.ReadAll(held); string(b) != "old" {
		t.Errorf("the file opened before Publish reads %q, want old: written in place, not renamed", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(ents))
	}
	if err := sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("content after sync = %q, want new", b)
	}
}

func TestPublishFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.toml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(dir, "sub") // a directory in the way of the rename
	if err := os.MkdirAll(filepath.Join(q, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if sync, err := Publish(q, []byte("new"), 0o600); err == nil || sync != nil {
		t.Fatalf("Publish over a non-empty directory: sync %v, err %v; want an error", sync != nil, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("content = %q, want old", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory holds %d entries, want the file and sub (no temporary file)", len(ents))
	}
}
