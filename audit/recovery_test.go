package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nextLine returns the line the next record of the log at path would have.
func nextLine(t *testing.T, path string, ev Event) []byte {
	t.Helper()
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	line, err := seal(last.Hash, last.Seq+1, time.Now(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func appendRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestTornTail simulates a writer that died halfway through a record: the
// log verifies up to the last complete record, and Open closes the torn
// line, names it in a log_recovered record and appends after it, without
// changing a byte already written.
func TestTornTail(t *testing.T) {
	path := writeLog(t, 5)
	line := nextLine(t, path, Event{Type: TypeToolCalled, Fields: map[string]any{FieldTool: "x"}})
	torn := line[:len(line)/2]
	appendRaw(t, path, torn)
	before, _ := os.ReadFile(path)

	rep := mustVerify(t, path)
	expectFindings(t, "torn tail", rep.Warnings, "torn-tail 6 0")
	if rep.Last.Seq != 5 {
		t.Fatalf("last verified record %d, want 5", rep.Last.Seq)
	}
	if recs, err := Read(path); err != nil || len(recs) != 5 {
		t.Fatalf("Read: %d records, %v", len(recs), err)
	}

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rs := l.Recoveries()
	wantTorn := TornLine{Offset: int64(len(before) - len(torn)), Bytes: int64(len(torn)), Digest: digestOf(torn)}
	if len(rs) != 1 || rs[0].Kind != RecoveredTorn || rs[0].Seq != 6 || len(rs[0].Torn) != 1 || rs[0].Torn[0] != wantTorn {
		t.Fatalf("recoveries %+v, want one torn line %+v closed by seq 6", rs, wantTorn)
	}
	if s := rs[0].String(); !strings.Contains(s, "recorded as seq 6") {
		t.Errorf("recovery message %q", s)
	}
	rec, err := l.Append(Event{Type: TypeClientClosed})
	if err != nil || rec.Seq != 7 {
		t.Fatalf("Append after recovery: seq %d, %v", rec.Seq, err)
	}

	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("recovery changed bytes already written")
	}
	rep = mustVerify(t, path)
	expectFindings(t, "recovered log", rep.Warnings, "torn-recovered 6 0")
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 || recs[5].Type != TypeLogRecovered || recs[5].Line != 7 || recs[6].Line != 8 {
		t.Fatalf("records after recovery: %d, %+v", len(recs), recs[5])
	}

	// A second Open finds nothing to repair.
	l2, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if rs := l2.Recoveries(); len(rs) != 0 {
		t.Fatalf("second Open recovered %v", rs)
	}
}

// TestTornTwice: a torn line, closed, then a torn log_recovered record
// (the writer died again while recovering), then a line of NULs as a power
// failure leaves. One log_recovered record names all three.
func TestTornTwice(t *testing.T) {
	path := writeLog(t, 2)
	line := nextLine(t, path, Event{Type: TypeToolCalled})
	appendRaw(t, path, line[:30])
	appendRaw(t, path, []byte("\n{\"v\":1,\"seq\":3,\"type\":\"log_rec\n\x00\x00\x00\x00"))
	rep := mustVerify(t, path)
	expectFindings(t, "torn lines", rep.Warnings, "torn-tail 3 0", "torn-tail 4 0", "torn-tail 5 0")

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rs := l.Recoveries(); len(rs) != 1 || len(rs[0].Torn) != 3 || rs[0].Torn[2].Bytes != 4 {
		t.Fatalf("recoveries %+v", rs)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	rep = mustVerify(t, path)
	expectFindings(t, "recovered", rep.Warnings, "torn-recovered 3 0", "torn-recovered 4 0", "torn-recovered 5 0")
	if rep.Last.Seq != 4 {
		t.Fatalf("last seq %d, want 4", rep.Last.Seq)
	}
}

// TestMissingNewline: the writer died after the record's last brace and
// before its newline, and before rewriting the head.
func TestMissingNewline(t *testing.T) {
	path := writeLog(t, 3)
	line := nextLine(t, path, Event{Type: TypeToolCalled, Fields: map[string]any{FieldTool: "x"}})
	appendRaw(t, path, line[:len(line)-1])
	rep := mustVerify(t, path)
	expectFindings(t, "missing newline", rep.Warnings, "missing-newline 4 4", "head-behind 0 4")

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rs := l.Recoveries()
	if len(rs) != 2 || rs[0].Kind != RecoveredHead || rs[1].Kind != RecoveredNewline || rs[1].Seq != 4 {
		t.Fatalf("recoveries %+v", rs)
	}
	if h, _, _ := ReadHead(HeadPath(path)); h.Seq != 4 {
		t.Fatalf("head not rewritten: %+v", h)
	}
	if rec, err := l.Append(Event{Type: TypeClientClosed}); err != nil || rec.Seq != 5 {
		t.Fatalf("Append: %d %v", rec.Seq, err)
	}
	rep = mustVerify(t, path)
	if len(rep.Warnings) > 0 || rep.Records != 5 {
		t.Fatalf("after recovery: %d records, warnings %v", rep.Records, rep.Warnings)
	}
}

// TestHeadBehind: the writer died between fsyncing a record and rewriting
// the head.
func TestHeadBehind(t *testing.T) {
	path := writeLog(t, 3)
	old, _ := os.ReadFile(HeadPath(path))
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	os.WriteFile(HeadPath(path), old, 0o600)
	expectFindings(t, "head behind", mustVerify(t, path).Warnings, "head-behind 0 4")

	l, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rs := l.Recoveries(); len(rs) != 1 || rs[0].Kind != RecoveredHead || rs[0].Seq != 4 {
		t.Fatalf("recoveries %+v", rs)
	}
	if rep := mustVerify(t, path); len(rep.Warnings) > 0 {
		t.Fatalf("warnings %v", rep.Warnings)
	}
}

// TestStaleHeadTemp: a temporary head file left by a killed writer is
// removed by the next Open.
func TestStaleHeadTemp(t *testing.T) {
	path := writeLog(t, 1)
	stale := filepath.Join(filepath.Dir(path), ".audit.head.tmp-123")
	os.WriteFile(stale, []byte("{"), 0o600)
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temp file: %v", err)
	}
}

// TestLogMovedAside: a Log whose file was moved aside while open appends to
// the file now at its path a log_recovered record naming the seqs it had
// written there and its last head, so that the new file does not verify
// as intact, and fails that step (ErrCut); the next one appends. The old
// file still verifies.
func TestLogMovedAside(t *testing.T) {
	path := writeLog(t, 2)
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	was := l.Head()
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); !errors.Is(err, ErrCut) {
		t.Fatalf("Append to the new log: %v, want ErrCut", err)
	}
	rec, err := l.Append(Event{Type: TypeClientClosed})
	if err != nil || rec.Seq != 3 {
		t.Fatalf("Append after the cut was recorded: %+v %v", rec, err)
	}
	recs, _ := Read(path)
	if len(recs) != 3 || recs[0].Type != TypeLogRecovered || recs[0].Prev != GenesisPrev || recs[1].Type != TypeRecordsLost {
		t.Fatalf("new log: %+v, want log_recovered, records_lost (the refused step's record), client_closed", recs)
	}
	var cut Cut
	b, _ := json.Marshal(recs[0].Fields[FieldCut])
	if err := json.Unmarshal(b, &cut); err != nil || cut != (Cut{From: 1, To: 2, Head: was}) {
		t.Fatalf("cut member %s, want seqs 1 to 2 and head %+v", b, was)
	}
	rep := verify(t, path)
	expectFindings(t, "new log", rep.Problems, "cut 1 1")
	if l.Recoveries()[0].Kind != RecoveredCut {
		t.Errorf("recoveries %+v", l.Recoveries())
	}
	if rep, _ := Verify(path+".old", ""); !rep.OK || rep.Records != 2 {
		t.Fatalf("old log: %+v", rep)
	}
}

// TestCorruptTail: a last record whose hash does not match is not a crash
// artefact; Open refuses it.
func TestCorruptTail(t *testing.T) {
	path := writeLog(t, 3)
	lines := readLines(t, path)
	lines[2] = strings.Replace(lines[2], "tool-3", "tool-9", 1)
	writeFile(t, path, lines)
	_, err := Open(path, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != int64(len(lines[0])+len(lines[1])) {
		t.Fatalf("Open: %v", err)
	}
}
