package audit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteRefusedWhenPathReplaced: once the log's path names something
// other than the file the Log has open (here a symbolic link, which a
// plain stat follows back to that same file), Write reports the records
// as in no log, so that the call they guard is not forwarded, and keeps
// refusing until the path is a regular file again.
func TestWriteRefusedWhenPathReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, err := l.Write([]Event{{Type: "first", Guards: true}}); n != 1 || err != nil {
		t.Fatalf("Write = %d, %v; want 1, nil", n, err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "elsewhere.jsonl")
	if err := os.Rename(path, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, path); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		n, err := l.Write([]Event{{Type: "guarded", Guards: true}})
		if n != 0 || err == nil {
			t.Fatalf("Write %d with a symbolic link at the log's path = %d, %v; want 0 and an error", i, n, err)
		}
		var we *WriteError
		if i == 0 && (!errors.As(err, &we) || !errors.Is(err, errReplaced)) {
			t.Errorf("Write error %v, want a *WriteError saying the path no longer names the file", err)
		}
	}
}
