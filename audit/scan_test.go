package audit_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/audit/audittest"
)

// scanAll runs Scan with fields and returns what it gave: the records,
// the lines and the error.
func scanAll(path string, fields func(string) bool) ([]audit.Record, []string, error) {
	var recs []audit.Record
	var lines []string
	err := audit.Scan(path, audit.ScanOptions{Fields: fields, Line: func(b []byte) { lines = append(lines, string(b)) }},
		func(r audit.Record) { recs = append(recs, r) })
	return recs, lines, err
}

// TestScanAsRead: Scan gives the records Read returns, with Fields only
// for the types asked for (and log_recovered, always), every line of the
// file to Line, and Read's error for a line that is not a record.
func TestScanAsRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	audittest.WriteLog(t, p, 1500)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"torn":`) // a crash mid-record: the next Open closes it with log_recovered
	f.Close()
	audittest.WriteLog(t, p, 20)

	want, err := audit.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	tools := func(typ string) bool { return typ == audit.TypeToolCalled }
	got, lines, err := scanAll(p, tools)
	if err != nil || len(got) != len(want) {
		t.Fatalf("Scan: %d records, %v; Read: %d", len(got), err, len(want))
	}
	recovered := 0
	for i, r := range want {
		if r.Type == audit.TypeLogRecovered {
			recovered++
		} else if r.Type != audit.TypeToolCalled {
			r.Fields = nil
		}
		if !reflect.DeepEqual(got[i], r) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], r)
		}
	}
	if recovered != 1 {
		t.Fatalf("%d log_recovered records, want the one closing the torn line", recovered)
	}
	b, _ := os.ReadFile(p)
	if file := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); !reflect.DeepEqual(lines, file) {
		t.Fatalf("Line saw %d lines, the file has %d", len(lines), len(file))
	}

	// A line that is not a record, with a record after it that does not
	// close it: Read's error, and Line still sees every line.
	os.WriteFile(p, append(append([]byte(lines[0]+"\nnot a record\n"), lines[1]...), "\nmore\n"...), 0o600)
	_, readErr := audit.Read(p)
	_, lines, err = scanAll(p, nil)
	if err == nil || readErr == nil || err.Error() != readErr.Error() || !strings.Contains(err.Error(), ":2: not a record") {
		t.Fatalf("Scan: %v; Read: %v", err, readErr)
	}
	if len(lines) != 4 {
		t.Fatalf("Line saw %d lines, want 4", len(lines))
	}
}

// TestVerifyScanAsRead: on a log that verifies, VerifyScan gives, in the
// same pass as its check, the records Read returns.
func TestVerifyScanAsRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	audittest.WriteLog(t, p, 700)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"torn":`)
	f.Close()
	audittest.WriteLog(t, p, 20)
	var got []audit.Record
	rep, err := audit.VerifyScan(p, audit.HeadPath(p), func(r audit.Record) { got = append(got, r) })
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %v", err, rep.Err())
	}
	want, err := audit.Read(p)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("VerifyScan gave %d records, Read %d (%v)", len(got), len(want), err)
	}
}
