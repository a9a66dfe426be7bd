package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteThenSync: Write puts the records in the file at once, chained,
// while the head still names the last durable record; until Sync the Log
// holds the lock, so another Log's step waits and then chains on; Sync
// names them in the head, and the log verifies without a warning.
func TestWriteThenSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Event{Type: "first"}); err != nil {
		t.Fatal(err)
	}
	n, err := l.Write([]Event{{Type: "a", Guards: true}, {Type: "b"}})
	if n != 2 || err != nil {
		t.Fatalf("Write = %d, %v; want 2, nil", n, err)
	}
	b, _ := os.ReadFile(path)
	if got := strings.Count(string(b), "\n"); got != 3 || !strings.Contains(string(b), `"type":"b"`) {
		t.Fatalf("after Write the file holds %d lines, want 3:\n%s", got, b)
	}
	if h, _, err := ReadHead(HeadPath(path)); err != nil || h.Seq != 1 {
		t.Fatalf("head before Sync: %+v %v; want seq 1, the last durable record", h, err)
	}
	other, err := Open(path, &Options{LockTimeout: 20 * time.Millisecond})
	if err == nil {
		other.Close()
		t.Fatal("another Log opened the log while this one holds the lock after Write")
	}
	if n, err := l.TryWrite([]Event{{Type: "c"}}); n != 1 || err != nil {
		t.Fatalf("TryWrite while holding the lock = %d, %v; want 1, nil", n, err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if h, _, err := ReadHead(HeadPath(path)); err != nil || h.Seq != 4 {
		t.Fatalf("head after Sync: %+v %v; want seq 4", h, err)
	}
	other, err = Open(path, &Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("another Log after Sync: %v", err)
	}
	defer other.Close()
	if _, err := other.Append(Event{Type: "d"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(path, HeadPath(path))
	if err != nil || !rep.OK || len(rep.Warnings) > 0 || rep.Last.Seq != 5 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestTryWriteBusy: with the lock held by another Log, TryWrite writes
// nothing, says ErrBusy and counts nothing lost; Write waits up to the
// lock timeout and then counts what it could not write, but for an event
// that guards an action.
func TestTryWriteBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	holder, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.Write([]Event{{Type: "held"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := l.TryWrite([]Event{{Type: "busy"}}); n != 0 || !errors.Is(err, ErrBusy) {
		t.Fatalf("TryWrite = %d, %v; want 0, ErrBusy", n, err)
	}
	var we *WriteError
	if n, err := l.Write([]Event{{Type: "call", Guards: true}, {Type: "result"}}); n != 0 || !errors.As(err, &we) || we.Op != "lock" {
		t.Fatalf("Write = %d, %v; want 0 and a lock WriteError", n, err)
	}
	if err := holder.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(nil); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var lost []Record
	for _, r := range recs {
		if r.Type == "busy" || r.Type == "call" || r.Type == "result" {
			t.Errorf("record %s was written", r.Type)
		}
		if r.Type == TypeRecordsLost {
			lost = append(lost, r)
		}
	}
	if len(lost) != 1 || lost[0].Fields["records"] != "1" || lost[0].Fields["types"].(map[string]any)["result"] != "1" {
		t.Fatalf("records_lost records %v: want one counting the result alone", lost)
	}
}
