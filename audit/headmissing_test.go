package audit

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestHeadDeletedWithTruncation: someone cut the last records and deleted
// the head. The next Open must not make the cut log verify as intact: it
// appends a log_recovered record saying the head was missing, which Verify
// reports as a warning for as long as the log exists.
func TestHeadDeletedWithTruncation(t *testing.T) {
	path := writeLog(t, 5)
	lines := readLines(t, path)
	writeFile(t, path, lines[:3])
	if err := os.Remove(HeadPath(path)); err != nil {
		t.Fatal(err)
	}
	expectFindings(t, "before Open", verify(t, path).Problems, "head-missing 0 0")

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := l.Recoveries()
	if len(rs) != 1 || rs[0].Kind != RecoveredHead || rs[0].Seq != 4 || !strings.Contains(rs[0].String(), "missing") {
		t.Fatalf("recoveries %+v", rs)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || recs[3].Type != TypeLogRecovered || recs[3].Fields[FieldHead] != HeadMissing || recs[3].Prev != recs[2].Hash {
		t.Fatalf("records after Open: %+v", recs)
	}
	if _, torn := recs[3].Fields[FieldTorn]; torn {
		t.Errorf("log_recovered record names torn lines: %+v", recs[3])
	}

	rep := mustVerify(t, path)
	expectFindings(t, "after Open", rep.Warnings, "head-was-missing 4 4")
	if msg := rep.Warnings[0].Error(); !strings.Contains(msg, "head file was missing") || !strings.Contains(msg, "after seq 3") {
		t.Errorf("warning %q", msg)
	}

	// Later Opens add nothing: the head is there again.
	l, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rep := mustVerify(t, path); rep.Records != 5 || len(rep.Warnings) != 1 {
		t.Fatalf("after a second Open: %d records, warnings %v", rep.Records, rep.Warnings)
	}

	var b strings.Builder
	if err := FormatTimeline(&b, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "log_recovered         epoch=-              run=-              head=missing") {
		t.Errorf("timeline does not show the missing head:\n%s", b.String())
	}
}

// TestHeadMissingWithTornTail: a missing head and a torn line make one
// log_recovered record with both members.
func TestHeadMissingWithTornTail(t *testing.T) {
	path := writeLog(t, 3)
	line := nextLine(t, path, Event{Type: TypeToolCalled})
	appendRaw(t, path, line[:20])
	os.Remove(HeadPath(path))

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	rs := l.Recoveries()
	if len(rs) != 2 || rs[0].Kind != RecoveredTorn || rs[1].Kind != RecoveredHead || rs[0].Seq != 4 || rs[1].Seq != 4 {
		t.Fatalf("recoveries %+v", rs)
	}
	rep := mustVerify(t, path)
	expectFindings(t, "warnings", rep.Warnings, "torn-recovered 4 0", "head-was-missing 5 4")
}

// TestHeadMissingNewline: a missing head and a last record without its
// newline: the newline, then the log_recovered record.
func TestHeadMissingNewline(t *testing.T) {
	path := writeLog(t, 3)
	line := nextLine(t, path, Event{Type: TypeToolCalled})
	appendRaw(t, path, line[:len(line)-1])
	os.Remove(HeadPath(path))

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	rs := l.Recoveries()
	if len(rs) != 2 || rs[0].Kind != RecoveredNewline || rs[0].Seq != 4 || rs[1].Kind != RecoveredHead || rs[1].Seq != 5 {
		t.Fatalf("recoveries %+v", rs)
	}
	rep := mustVerify(t, path)
	expectFindings(t, "warnings", rep.Warnings, "head-was-missing 5 5")
}

// TestForgedHeadRecovery: a log_recovered record whose head member is not
// "missing" is a problem, not a warning.
func TestForgedHeadRecovery(t *testing.T) {
	path := writeLog(t, 2)
	recs, _ := Read(path)
	line, err := seal(recs[1].Hash, 3, time.Now(), Event{Type: TypeLogRecovered, Fields: map[string]any{FieldHead: "fine"}})
	if err != nil {
		t.Fatal(err)
	}
	appendRaw(t, path, line)
	rep, err := Verify(path, "")
	if err != nil {
		t.Fatal(err)
	}
	expectFindings(t, "forged head recovery", rep.Problems, "bad-recovery 3 3")
}

// TestFreshLogWithoutHead: a new, empty log has no head and needs no
// log_recovered record.
func TestFreshLogWithoutHead(t *testing.T) {
	_, path := openTemp(t)
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rec, err := l.Append(Event{Type: TypeClientClosed}); err != nil || rec.Seq != 1 {
		t.Fatalf("Append: %+v %v", rec, err)
	}
	if rep := mustVerify(t, path); len(rep.Warnings) != 0 {
		t.Fatalf("warnings %v", rep.Warnings)
	}
}
