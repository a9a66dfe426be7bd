package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A full disk is simulated with a file-size limit (RLIMIT_FSIZE) in a
// writer process: with SIGXFSZ ignored, a write past the limit fails with
// EFBIG, as one on a full file system fails with ENOSPC. Linux and macOS
// both have it, and it needs no privilege. (The host's end-to-end test
// fills a real tmpfs where mounting is permitted.)

// fullResult is what a "full" child reports on stdout.
type fullResult struct {
	Errors []string // one per failed step
	Lost   []int    // WriteError.Lost of each failed step
	EFBIG  bool     // every failure was EFBIG
	Healed bool     // the retry after the limit was lifted succeeded
}

// runFullChild limits the log to 100 bytes more than it holds, appends a
// batch of 5 and one of 2 (both fail), then, unless AUDIT_TEST_N is 0,
// lifts the limit and retries with an empty batch.
func runFullChild(l *Log) error {
	signal.Ignore(syscall.SIGXFSZ)
	fi, err := os.Stat(l.Path())
	if err != nil {
		return err
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	lim := unix.Rlimit{Cur: uint64(fi.Size()) + 100, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		return err
	}
	var res fullResult
	res.EFBIG = true
	for _, n := range []int{5, 2} {
		evs := make([]Event, n)
		for i := range evs {
			evs[i] = Event{Type: TypeToolCalled, Epoch: "01JQFULL", Fields: map[string]any{FieldTool: "echo", "i": i}}
		}
		_, err := l.AppendBatch(evs)
		var we *WriteError
		if !errors.As(err, &we) {
			return fmt.Errorf("batch of %d: want a *WriteError, got %v", n, err)
		}
		res.Errors = append(res.Errors, err.Error())
		res.Lost = append(res.Lost, we.Lost)
		res.EFBIG = res.EFBIG && errors.Is(err, syscall.EFBIG)
	}
	if os.Getenv(childN) != "0" {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			return err
		}
		_, err := l.AppendBatch(nil)
		res.Healed = err == nil
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func runFull(t *testing.T, path string, heal bool) fullResult {
	t.Helper()
	n := 1
	if !heal {
		n = 0
	}
	out, err := childCmd("full", path, "full", n).Output()
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	var res fullResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("writer said %q: %v", out, err)
	}
	if !res.EFBIG || len(res.Lost) != 2 || res.Lost[0] != 5 {
		t.Fatalf("writer: %+v; want two EFBIG failures, the first losing 5 records", res)
	}
	if !strings.Contains(res.Errors[0], path) {
		t.Errorf("error %q does not name the log", res.Errors[0])
	}
	return res
}

// lostWarnings returns the records-lost warnings of the log at path, which
// must verify.
func lostWarnings(t *testing.T, path string) []Problem {
	t.Helper()
	rep := mustVerify(t, path)
	var out []Problem
	for _, w := range rep.Warnings {
		if w.Kind == WarnRecordsLost {
			out = append(out, w)
		}
	}
	return out
}

// TestFullDiskGapRecorded: records that could not be written are named by a
// records_lost record as soon as writing works again, and verify warns.
func TestFullDiskGapRecorded(t *testing.T) {
	path := writeLog(t, 3)
	res := runFull(t, path, true)
	if !res.Healed {
		t.Fatalf("retry after the limit was lifted: %v", res.Errors)
	}
	ws := lostWarnings(t, path)
	if len(ws) != 1 || !strings.Contains(ws[0].Msg, "7 record(s) (tool_called 7)") || !strings.Contains(ws[0].Msg, "file too large") {
		t.Fatalf("records-lost warnings: %v", ws)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.Type != TypeRecordsLost || last.Fields["records"] != "7" || last.Fields["from"] == last.Fields["to"] {
		t.Fatalf("last record: %+v", last)
	}
	if _, err := os.Stat(LostPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar left after the gap was recorded: %v", err)
	}
}

// TestFullDiskGapOutlivesWriter: a writer that ends while it still cannot
// write leaves the count in the sidecar file; the next writer records it.
func TestFullDiskGapOutlivesWriter(t *testing.T) {
	path := writeLog(t, 3)
	runFull(t, path, false)
	if _, err := os.Stat(LostPath(path)); err != nil {
		t.Fatalf("sidecar: %v", err)
	}
	if ws := lostWarnings(t, path); len(ws) != 0 {
		t.Fatalf("gap recorded before any write succeeded: %v", ws)
	}
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	ws := lostWarnings(t, path)
	if len(ws) != 1 || !strings.Contains(ws[0].Msg, "7 record(s)") {
		t.Fatalf("records-lost warnings: %v", ws)
	}
	if _, err := os.Stat(LostPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar left after the gap was recorded: %v", err)
	}
}
