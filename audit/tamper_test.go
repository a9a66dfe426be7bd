package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openTemp opens a new log in a temporary directory.
func openTemp(t testing.TB) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// writeLog writes a log of n tool_called records, tool-1 … tool-n.
func writeLog(t *testing.T, n int) string {
	t.Helper()
	l, path := openTemp(t)
	for i := 1; i <= n; i++ {
		_, err := l.Append(Event{Type: TypeToolCalled, Epoch: "01JQEPOCH", Run: "r1",
			Fields: map[string]any{FieldTool: fmt.Sprintf("tool-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// verify runs Verify with the default head path.
func verify(t *testing.T, path string) *Report {
	t.Helper()
	rep, err := Verify(path, HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != (len(rep.Problems) == 0) {
		t.Fatalf("OK = %v with %d problems", rep.OK, len(rep.Problems))
	}
	return rep
}

// mustVerify fails the test unless the log verifies.
func mustVerify(t *testing.T, path string) *Report {
	t.Helper()
	rep := verify(t, path)
	if !rep.OK {
		t.Fatalf("log does not verify:\n%v", rep.Err())
	}
	return rep
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func writeFile(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// findings returns "kind line seq" for each finding, for messages and
// comparisons.
func findings(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %d %d", p.Kind, p.Line, p.Seq))
	}
	return out
}

func expectFindings(t *testing.T, what string, ps []Problem, want ...string) {
	t.Helper()
	got := strings.Join(findings(ps), "; ")
	if w := strings.Join(want, "; "); got != w {
		t.Errorf("%s:\n got %s\nwant %s\n%v", what, got, w, errors.Join(asErrors(ps)...))
	}
}

func asErrors(ps []Problem) []error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p)
	}
	return errs
}

func TestUntouchedLogVerifies(t *testing.T) {
	path := writeLog(t, 10)
	rep := mustVerify(t, path)
	if len(rep.Warnings) > 0 || rep.Records != 10 || rep.Last.Seq != 10 || rep.Err() != nil {
		t.Fatalf("report %+v", rep)
	}
	h, ok, err := ReadHead(HeadPath(path))
	if err != nil || !ok || h != rep.Last {
		t.Fatalf("head %+v %v %v, want %+v", h, ok, err, rep.Last)
	}
}

func TestTamperEditedField(t *testing.T) {
	path := writeLog(t, 10)
	lines := readLines(t, path)
	edited := strings.Replace(lines[4], `"tool":"tool-5"`, `"tool":"tool-X"`, 1)
	if edited == lines[4] {
		t.Fatal("line 5 has no tool-5")
	}
	lines[4] = edited
	writeFile(t, path, lines)
	rep := verify(t, path)
	expectFindings(t, "edited field", rep.Problems, "edited 5 5")
	p := rep.Problems[0]
	if !strings.HasPrefix(p.Error(), path+":5: seq 5: hash does not match the record's contents (edited) (expected sha256:") {
		t.Errorf("message %q", p.Error())
	}
	if p.Expected == p.Found || !strings.HasPrefix(p.Found, "sha256:") {
		t.Errorf("expected %s found %s", p.Expected, p.Found)
	}
}

// TestTamperEditedAndRehashed edits a record and recomputes its hash, as
// someone covering their tracks would: the next record's prev gives it away.
func TestTamperEditedAndRehashed(t *testing.T) {
	path := writeLog(t, 10)
	lines := readLines(t, path)
	rec, _, err := parseLine([]byte(strings.TrimSuffix(lines[4], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	oldHash := rec.Hash
	ev := Event{Type: rec.Type, Epoch: rec.Epoch, Run: rec.Run, Fields: map[string]any{FieldTool: "tool-X"}}
	line, err := seal(rec.Prev, rec.Seq, rec.Time, ev)
	if err != nil {
		t.Fatal(err)
	}
	lines[4] = string(line)
	writeFile(t, path, lines)
	newRec, _, _ := parseLine(line[:len(line)-1])

	rep := verify(t, path)
	expectFindings(t, "rehashed edit", rep.Problems, "broken-link 6 6")
	want := fmt.Sprintf("%s:6: seq 6: prev does not match hash of seq 5 (expected %s, found %s)", path, newRec.Hash, oldHash)
	if got := rep.Problems[0].Error(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

func TestTamperDeletedLine(t *testing.T) {
	path := writeLog(t, 10)
	lines := readLines(t, path)
	lines = append(lines[:4], lines[5:]...)
	writeFile(t, path, lines)
	rep := verify(t, path)
	expectFindings(t, "deleted line", rep.Problems, "seq-gap 5 6", "broken-link 5 6")
	if msg := rep.Problems[0].Error(); !strings.Contains(msg, ":5: seq 6: follows seq 4: 1 record(s) missing") {
		t.Errorf("message %q", msg)
	}
}

func TestTamperReorderedLines(t *testing.T) {
	path := writeLog(t, 10)
	lines := readLines(t, path)
	lines[3], lines[4] = lines[4], lines[3]
	writeFile(t, path, lines)
	rep := verify(t, path)
	expectFindings(t, "reordered lines", rep.Problems,
		"seq-gap 4 5", "broken-link 4 5",
		"seq-order 5 4", "broken-link 5 4",
		"seq-gap 6 6", "broken-link 6 6")
}

func TestTamperDeletedFirstLine(t *testing.T) {
	path := writeLog(t, 3)
	lines := readLines(t, path)
	writeFile(t, path, lines[1:])
	rep := verify(t, path)
	expectFindings(t, "deleted first line", rep.Problems, "seq-gap 1 2", "broken-link 1 2")
}

func TestTamperTruncatedTail(t *testing.T) {
	path := writeLog(t, 10)
	lines := readLines(t, path)
	writeFile(t, path, lines[:8])
	rep := verify(t, path)
	expectFindings(t, "truncated by two lines", rep.Problems, "truncated 9 0")
	if msg := rep.Problems[0].Error(); !strings.Contains(msg, "log ends at seq 8 but "+HeadPath(path)+" records seq 10: tail truncated") {
		t.Errorf("message %q", msg)
	}

	// Cut inside the last line: a torn tail, and still a truncation.
	writeFile(t, path, append(lines[:9], lines[9][:40]))
	rep = verify(t, path)
	expectFindings(t, "truncated mid-line", rep.Problems, "truncated 11 0")
	expectFindings(t, "truncated mid-line", rep.Warnings, "torn-tail 10 0")

	// A host must not append to it.
	_, err := Open(path, nil)
	var hm *HeadMismatchError
	if !errors.As(err, &hm) || hm.Head.Seq != 10 || hm.Log.Seq != 9 {
		t.Fatalf("Open of a truncated log: %v", err)
	}
}

func TestTamperHead(t *testing.T) {
	path := writeLog(t, 5)
	headPath := HeadPath(path)
	good, _ := os.ReadFile(headPath)

	if err := os.Remove(headPath); err != nil {
		t.Fatal(err)
	}
	expectFindings(t, "head removed", verify(t, path).Problems, "head-missing 0 0")

	os.WriteFile(headPath, []byte(`{"v":1,"seq":3,"hash":"`+GenesisPrev+`"}`), 0o600)
	expectFindings(t, "head with a wrong hash", verify(t, path).Problems, "head-mismatch 0 3")

	lines := readLines(t, path)
	rec, _, _ := parseLine([]byte(strings.TrimSpace(lines[2])))
	os.WriteFile(headPath, []byte(fmt.Sprintf(`{"v":1,"seq":3,"hash":%q}`, rec.Hash)), 0o600)
	// Two behind is what a writer stopped between a batch and its head
	// rewrite leaves: a warning, as long as the chain leads to the head.
	rep2 := verify(t, path)
	expectFindings(t, "head two behind", rep2.Problems)
	expectFindings(t, "head two behind", rep2.Warnings, "head-behind 0 5")

	os.WriteFile(headPath, []byte(`{"v":1,"seq":"3"}`), 0o600)
	rep := verify(t, path)
	expectFindings(t, "malformed head", rep.Problems, "head-mismatch 0 0")
	if !strings.Contains(rep.Problems[0].Error(), headPath) {
		t.Errorf("message does not name the head file: %s", rep.Problems[0].Error())
	}

	os.WriteFile(headPath, good, 0o600)
	mustVerify(t, path)
}

func TestMalformedMiddleLine(t *testing.T) {
	path := writeLog(t, 5)
	lines := readLines(t, path)
	lines[2] = `{"v":1,"seq":3` + "\n"
	writeFile(t, path, lines)
	rep := verify(t, path)
	expectFindings(t, "malformed line", rep.Problems, "malformed 3 0", "seq-gap 4 4", "broken-link 4 4")
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path+":3: not a record") {
		t.Fatalf("Read: %v", err)
	}
}

// TestForgedRecovery: a log_recovered record that does not name the line
// before it does not excuse it.
func TestForgedRecovery(t *testing.T) {
	path := writeLog(t, 3)
	lines := readLines(t, path)
	last, _, _ := parseLine([]byte(strings.TrimSpace(lines[2])))
	rec, err := seal(last.Hash, 4, last.Time, Event{Type: TypeLogRecovered,
		Fields: map[string]any{FieldTorn: []TornLine{{Offset: 1, Bytes: 2, Digest: GenesisPrev}}}})
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, "garbage\n", string(rec))
	writeFile(t, path, lines)
	os.Remove(HeadPath(path))
	rep, err := Verify(path, "")
	if err != nil {
		t.Fatal(err)
	}
	expectFindings(t, "forged recovery", rep.Problems, "malformed 4 0", "bad-recovery 5 4")
}
