package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyLog writes n records to a new log through a Log that keeps a copy
// of its head in a directory of its own (made by the Log), one record
// of them, the second, a checkpoint; it returns the log's path and the
// copy's directory.
func copyLog(t *testing.T, n int) (path, dir string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.jsonl")
	dir = filepath.Join(t.TempDir(), "state", "project")
	l, err := Open(path, &Options{CopyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		ev := Event{Type: TypeToolCalled, Epoch: "01JQEPOCH", Run: "r1", Fields: map[string]any{FieldTool: fmt.Sprintf("tool-%d", i)}}
		if i == 2 {
			ev.Type, ev.Checkpoint = TypeApprovalGranted, true
		}
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

func verifyCopy(t *testing.T, path, dir string) *Report {
	t.Helper()
	rep, err := VerifyWith(path, VerifyOptions{Head: HeadPath(path), CopyDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// rechain rewrites the log at path as someone who can write it (and not
// the copy) would: the records through edit, a new intact chain, a head
// that names its end.
func rechain(t *testing.T, path string, edit func(i int, r Record) map[string]any) {
	t.Helper()
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if _, err := l.Append(Event{Type: r.Type, Epoch: r.Epoch, Run: r.Run, Fields: edit(i, r), Time: r.Time}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, p := range [][2]string{{tmp, path}, {HeadPath(tmp), HeadPath(path)}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopyKeptWithHead: every step writes the copy of the head, and the
// checkpoint's seq and hash, outside the log's directory; Verify finds
// them in agreement with the log.
func TestCopyKeptWithHead(t *testing.T) {
	path, dir := copyLog(t, 5)
	h, ok, err := ReadHead(CopyHeadPath(dir, path))
	if err != nil || !ok {
		t.Fatalf("copy of the head: %v %v", ok, err)
	}
	own, _, _ := ReadHead(HeadPath(path))
	if h != own || h.Seq != 5 {
		t.Fatalf("copy %+v, head %+v", h, own)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := os.ReadFile(CopyCheckpointsPath(dir, path))
	if want := fmt.Sprintf("{\"seq\":2,\"hash\":%q}\n", recs[1].Hash); err != nil || string(ck) != want {
		t.Fatalf("checkpoints file %q (%v), want %q", ck, err, want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("copy directory: %v %v", fi, err)
	}
	rep := verifyCopy(t, path, dir)
	if !rep.OK || !rep.CopyAgrees || rep.Checkpoints != 1 || len(rep.Warnings) != 0 {
		t.Fatalf("verify: %+v", rep)
	}
}

// TestCopyFindsRewrite: the log and its head rewritten with a new, intact
// chain (what whoever can write the project can do while no writer runs)
// verify against themselves; against the copy they do not, and a writer
// refuses to append to them.
func TestCopyFindsRewrite(t *testing.T) {
	path, dir := copyLog(t, 5)
	rechain(t, path, func(i int, r Record) map[string]any {
		if i == 0 {
			return map[string]any{FieldTool: "rewritten"}
		}
		return r.Fields
	})
	if rep := verify(t, path); !rep.OK {
		t.Fatalf("the rewritten log does not verify on its own: %v", rep.Err())
	}
	rep := verifyCopy(t, path, dir)
	expectFindings(t, "rewritten", rep.Problems, "copy-mismatch 0 5", "copy-mismatch 1 2")
	if msg := rep.Problems[0].Error(); !strings.Contains(msg, CopyHeadPath(dir, path)) || !strings.Contains(msg, "rewritten") {
		t.Errorf("problem %q", msg)
	}
	_, err := Open(path, &Options{CopyDir: dir})
	var cm *CopyMismatchError
	if !errors.As(err, &cm) || !strings.Contains(err.Error(), "rewritten") || !strings.Contains(err.Error(), "remove "+CopyHeadPath(dir, path)) {
		t.Fatalf("Open of a rewritten log: %v", err)
	}
	if n := len(readLines(t, path)); n != 6 { // five lines and what follows the last newline
		t.Fatalf("Open appended to a rewritten log: %d lines", n-1)
	}
}

// TestCopyFindsCut: the log cut short with its head rewritten to match
// is a problem against the copy, and a writer refuses it.
func TestCopyFindsCut(t *testing.T) {
	path, dir := copyLog(t, 5)
	rechain(t, path, func(_ int, r Record) map[string]any { return r.Fields })
	lines := readLines(t, path)
	writeFile(t, path, lines[:3])
	rechain(t, path, func(_ int, r Record) map[string]any { return r.Fields })
	rep := verifyCopy(t, path, dir)
	expectFindings(t, "cut", rep.Problems, "copy-mismatch 0 5")
	if !strings.Contains(rep.Problems[0].Msg, "cut") {
		t.Errorf("problem %v", rep.Problems[0])
	}
	var cm *CopyMismatchError
	if _, err := Open(path, &Options{CopyDir: dir}); !errors.As(err, &cm) {
		t.Fatalf("Open of a cut log: %v", err)
	}
	// The whole log deleted with its head: the copy still says it was there.
	os.Remove(path)
	os.Remove(HeadPath(path))
	rep = verifyCopy(t, path, dir)
	expectFindings(t, "deleted", rep.Problems, "log-missing 0 0")
}

// TestCopyBehind: records after the copy's seq, with the head file as
// far behind as the copy, are what a writer killed before it synced them
// leaves: a warning, and the next writer records it in the chain (a
// warning from then on) and writes the copy again. With the head file
// ahead of the copy they were appended by a writer that does not keep
// it: a problem, and a writer refuses the log until the copy is removed.
func TestCopyBehind(t *testing.T) {
	t.Run("killed", func(t *testing.T) {
		path, dir := copyLog(t, 3)
		head, err := os.ReadFile(HeadPath(path))
		if err != nil {
			t.Fatal(err)
		}
		appendPlain(t, path, 2)
		if err := os.WriteFile(HeadPath(path), head, 0o600); err != nil { // the head as the killed writer left it
			t.Fatal(err)
		}
		rep := verifyCopy(t, path, dir)
		if !rep.OK {
			t.Fatalf("killed writer: %v", rep.Err())
		}
		expectFindings(t, "killed", rep.Warnings, "head-behind 0 5", "copy-behind 0 3")

		l, err := Open(path, &Options{CopyDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if rs := l.Recoveries(); len(rs) != 2 || rs[1].Kind != RecoveredCopy || rs[1].Seq != 6 {
			t.Fatalf("recoveries %v", rs)
		}
		l.Close()
		rep = verifyCopy(t, path, dir)
		if !rep.OK || !rep.CopyAgrees {
			t.Fatalf("after a writer caught up: %v", rep.Err())
		}
		expectFindings(t, "recorded", rep.Warnings, "copy-recovered 6 6")
		if msg := rep.Warnings[0].Error(); !strings.Contains(msg, "records 4 to 5") || !strings.Contains(msg, "behind") {
			t.Errorf("warning %q", msg)
		}
	})
	t.Run("other writer", func(t *testing.T) {
		path, dir := copyLog(t, 3)
		appendPlain(t, path, 2)
		rep := verifyCopy(t, path, dir)
		expectFindings(t, "other writer", rep.Problems, "copy-unanchored 0 3")
		var cm *CopyMismatchError
		if _, err := Open(path, &Options{CopyDir: dir}); !errors.As(err, &cm) {
			t.Fatalf("Open after another writer: %v", err)
		}
		// The person accepts the log as it is: the copy removed, the
		// next writer records it missing and keeps it again.
		if err := os.Remove(CopyHeadPath(dir, path)); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path, &Options{CopyDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		rep = verifyCopy(t, path, dir)
		if !rep.OK || !rep.CopyAgrees {
			t.Fatalf("after the copy was removed: %v", rep.Err())
		}
		expectFindings(t, "accepted", rep.Warnings, "copy-recovered 6 6")
	})
}

// appendPlain appends n records through a Log that keeps no copy.
func appendPlain(t *testing.T, path string, n int) {
	t.Helper()
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
}

// TestCopyMissing: a log with records and no copy (written before a
// writer kept one) is a warning; the next writer records that, writes
// the copy, and the record stays a warning. A new log needs no record.
func TestCopyMissing(t *testing.T) {
	path := writeLog(t, 3)
	dir := filepath.Join(t.TempDir(), "state")
	rep := verifyCopy(t, path, dir)
	if !rep.OK {
		t.Fatalf("no copy yet: %v", rep.Err())
	}
	expectFindings(t, "no copy yet", rep.Warnings, "copy-missing 0 0")
	l, err := Open(path, &Options{CopyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	rep = verifyCopy(t, path, dir)
	expectFindings(t, "recorded", rep.Warnings, "copy-recovered 4 4")
	if !rep.OK || !rep.CopyAgrees {
		t.Fatalf("after a writer: %v", rep.Err())
	}

	path, _ = copyLog(t, 2)
	if recs, _ := Read(path); len(recs) != 2 {
		t.Fatalf("a new log with a copy: %d records, want 2 (no log_recovered)", len(recs))
	}
}

// TestCopyWriteFailureFailsStep: a copy that cannot be written fails the
// step as a head that cannot be written does: an error naming the copy.
func TestCopyWriteFailureFailsStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	dir := t.TempDir()
	// A directory where the checkpoints file should be: no file can be
	// appended to there, by root either.
	if err := os.Mkdir(CopyCheckpointsPath(dir, path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, &Options{CopyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Append(Event{Type: TypeApprovalGranted, Checkpoint: true})
	var we *WriteError
	if !errors.As(err, &we) || we.Op != "copy" {
		t.Fatalf("Append with a copy that cannot be written: %v", err)
	}
}

// TestCopyWriteSync: Write leaves the copy, as the head, to Sync, which
// writes both, with the checkpoints Write put in the file.
func TestCopyWriteSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	dir := filepath.Join(t.TempDir(), "state")
	l, err := Open(path, &Options{CopyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Write([]Event{{Type: TypeClientConnected}, {Type: TypeApprovalGranted, Checkpoint: true}, {Type: TypeToolCalled}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ReadHead(CopyHeadPath(dir, path)); ok {
		t.Fatal("copy written before Sync")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	h, ok, err := ReadHead(CopyHeadPath(dir, path))
	if err != nil || !ok || h != l.Head() {
		t.Fatalf("copy after Sync: %+v %v %v, head %+v", h, ok, err, l.Head())
	}
	rep := verifyCopy(t, path, dir)
	if !rep.OK || !rep.CopyAgrees || rep.Checkpoints != 1 {
		t.Fatalf("verify: %+v", rep)
	}
}
