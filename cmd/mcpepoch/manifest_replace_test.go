package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestRecordReplacesManifestByRename: record replaces the run manifest with
// a new file renamed over the old one, never by writing into the old file.
// A reader (a host, status) that opened the old manifest keeps reading the
// whole old manifest, never a torn mix of two builds. The test holds the old
// manifest open across a second record of a changed build and checks that
// what the open file holds is byte for byte the old manifest and that the
// path now names another inode holding the new one.
func TestRecordReplacesManifestByRename(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir := shortRoot(t)
	entry := filepath.Join(dir, "server.sh")
	record := func() {
		t.Helper()
		out, code := testenv.Run(t, dir, []string{"NO_COLOR=1"}, bin, "record", "--command", "sh server.sh")
		if code != 0 {
			t.Fatalf("record: exit %d\n%s", code, out)
		}
	}
	if err := os.WriteFile(entry, []byte("exec cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record()
	path := layout.Manifest(dir)
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	before, err := io.ReadAll(old)
	if err != nil {
		t.Fatal(err)
	}
	var oldSt syscall.Stat_t
	if err := syscall.Fstat(int(old.Fd()), &oldSt); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(entry, []byte("exec cat -u\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record()

	held, err := io.ReadAll(io.NewSectionReader(old, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(held, before) {
		t.Errorf("the manifest held open changed under its reader: it was written in place\nbefore:\n%s\nnow:\n%s", before, held)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(after, before) {
		t.Fatalf("the second record left %s as it was; the entry changed", path)
	}
	var newSt syscall.Stat_t
	if err := syscall.Stat(path, &newSt); err != nil {
		t.Fatal(err)
	}
	if newSt.Dev == oldSt.Dev && newSt.Ino == oldSt.Ino {
		t.Errorf("%s is the same inode (%d) after the record: it was rewritten in place, not replaced", path, newSt.Ino)
	}
}
