package audit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
)

// addGolden adds the checked-in golden log and head as a seed.
func addGolden(f *testing.F) {
	log, err := os.ReadFile(filepath.Join("testdata", "golden.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	head, err := os.ReadFile(filepath.Join("testdata", "golden.head"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(log, head)
	f.Add(log[:len(log)/2], head)           // torn at a crash
	f.Add(append(log, log...), []byte(nil)) // replayed
	f.Add([]byte("{\"v\":1,\"seq\":1}\n\x00\x00"), []byte("{"))
}

// writeLog writes log and head (when not nil) into a fresh directory and
// returns the log's path.
func writeLog(t *testing.T, log, head []byte) string {
	dir := t.TempDir()
	p := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(p, log, 0o600); err != nil {
		t.Fatal(err)
	}
	if head != nil {
		if err := os.WriteFile(audit.HeadPath(p), head, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// FuzzVerify: audit verify reads any log and head without panicking, and
// its report is consistent: OK exactly when there are no problems.
func FuzzVerify(f *testing.F) {
	addGolden(f)
	f.Fuzz(func(t *testing.T, log, head []byte) {
		p := writeLog(t, log, head)
		r, err := audit.Verify(p, audit.HeadPath(p))
		if err != nil {
			return
		}
		if r.OK != (len(r.Problems) == 0) {
			t.Fatalf("report OK=%v with %d problems", r.OK, len(r.Problems))
		}
		audit.Read(p)
		audit.ReadHead(audit.HeadPath(p))
	})
}

// FuzzOpenAppend: opening any log either fails with an error or gives a
// log whose next record, once appended, is the one verify ends on.
func FuzzOpenAppend(f *testing.F) {
	addGolden(f)
	f.Fuzz(func(t *testing.T, log, head []byte) {
		p := writeLog(t, log, head)
		l, err := audit.Open(p, &audit.Options{LockTimeout: time.Second})
		if err != nil {
			return
		}
		defer l.Close()
		rec, err := l.Append(audit.Event{Type: audit.TypeToolCalled, Epoch: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Fields: map[string]any{audit.FieldTool: "x"}})
		if err != nil {
			return
		}
		r, err := audit.Verify(p, audit.HeadPath(p))
		if err != nil {
			t.Fatalf("verify after an append: %v", err)
		}
		if r.Last.Seq != rec.Seq || r.Last.Hash != rec.Hash {
			t.Fatalf("verify ends on %+v, the append wrote seq %d %s", r.Last, rec.Seq, rec.Hash)
		}
	})
}

// FuzzAppendFields: any field name and value either is refused by Append or
// is written as a record that reads back and verifies.
func FuzzAppendFields(f *testing.F) {
	f.Add("tool", "read_file", int64(1))
	f.Add("note", "café <ok> ✓\u2028\x1b[2J", int64(1)<<60)
	f.Add("hash", "x", int64(-1))
	f.Add("", "\xff", int64(0))
	f.Fuzz(func(t *testing.T, key, val string, n int64) {
		p := writeLog(t, nil, nil)
		l, err := audit.Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		rec, err := l.Append(audit.Event{Type: audit.TypeToolResult, Fields: map[string]any{key: val, key + "_n": n}})
		if err != nil {
			return
		}
		recs, err := audit.Read(p)
		if err != nil || len(recs) != 1 || recs[0].Hash != rec.Hash {
			t.Fatalf("read back %d records (%v), want the one appended", len(recs), err)
		}
		if r, err := audit.Verify(p, audit.HeadPath(p)); err != nil || !r.OK {
			t.Fatalf("verify of one appended record: %+v, %v", r, err)
		}
	})
}
