package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHeadReplacedWhileOpen: a head file (and a copy of the head) that
// another file replaced at its path while a Log kept it open for
// rewriting in place is written at the path, not into the file that was
// moved away: the next step sees the path name another file and writes
// the head there atomically.
func TestHeadReplacedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	copyDir := filepath.Join(dir, "state")
	l, err := Open(path, &Options{CopyDir: copyDir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 2 {
		if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{HeadPath(path), CopyHeadPath(copyDir, path)} {
		// The same head, in another file renamed over the path: the
		// catch-up finds nothing to repair, only the rewrite can tell.
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{HeadPath(path), CopyHeadPath(copyDir, path)} {
		h, ok, err := ReadHead(p)
		if err != nil || !ok || h.Seq != 3 {
			rel, _ := filepath.Rel(dir, p)
			t.Errorf("%s after the third record: %+v (ok %v, err %v), want seq 3", rel, h, ok, err)
		}
	}
}
