package host

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

func testAuditor(t *testing.T) (*auditor, string) {
	t.Helper()
	dir := t.TempDir()
	if err := layout.MkdirAll(layout.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	a, err := openAuditor(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	return a, dir
}

// TestAuditRecordWrittenBeforeForward: the tool_called record a call
// waits for is in the log file when guard returns (write(2) done by the
// goroutine that decided the call, before its fsync), after what was
// queued before it, and the log verifies once synced.
func TestAuditRecordWrittenBeforeForward(t *testing.T) {
	a, dir := testAuditor(t)
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	for i := range 50 {
		a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "before"})
		// With the writer goroutine at rest (it may otherwise be writing,
		// and then the record waits its turn: TestAuditRecordWaitsForLock),
		// the goroutine that decides the call writes its record.
		a.flush()
		tk := a.guard(audit.TypeToolCalled, ep, run, map[string]any{audit.FieldTool: "echo", "n": i}, true)
		written, pending := a.recorded(tk)
		if !written || pending {
			t.Fatalf("call %d: record written %v, pending %v right after guard; want it in the file", i, written, pending)
		}
		b, err := os.ReadFile(layout.Audit(dir))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		last := string(lines[len(lines)-1])
		if !strings.Contains(last, `"type":"tool_called"`) || !strings.Contains(last, `"n":`+strconv.Itoa(i)+`,`) ||
			!strings.Contains(string(lines[len(lines)-2]), `"tool":"before"`) {
			t.Fatalf("call %d: the log ends with\n%s\n%s\nwant its tool_result, then its tool_called", i, lines[len(lines)-2], last)
		}
	}
	a.flush()
	if rep, err := audit.Verify(layout.Audit(dir), audit.HeadPath(layout.Audit(dir))); err != nil || !rep.OK || len(rep.Warnings) > 0 || rep.Last.Seq != 100 {
		t.Fatalf("verify after flush: %v %+v", err, rep)
	}
}

// TestAuditRecordWaitsForLock: while another process holds the log's
// lock, a call's record is not written at once but pending (the call
// waits: whenRecorded), written as soon as the lock is free; held for
// longer than the host waits, the record is not written, the call is
// refused, and its record is not counted as lost.
func TestAuditRecordWaitsForLock(t *testing.T) {
	a, dir := testAuditor(t)
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	a.flush() // the writer lets the lock go
	lk, err := os.OpenFile(strings.TrimSuffix(layout.Audit(dir), ".jsonl")+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	tk := a.guard(audit.TypeToolCalled, ep, run, map[string]any{audit.FieldTool: "echo"}, true)
	if written, pending := a.recorded(tk); written || !pending {
		t.Fatalf("with the lock held elsewhere: written %v, pending %v; want pending", written, pending)
	}
	got := make(chan bool)
	go func() { got <- a.whenRecorded(tk) }()
	time.Sleep(100 * time.Millisecond)
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the record was not written once the lock was free")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("whenRecorded did not return once the lock was free")
	}

	a.flush()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	tk = a.guard(audit.TypeToolCalled, ep, run, map[string]any{audit.FieldTool: "refused"}, true)
	if a.whenRecorded(tk) {
		t.Fatal("whenRecorded reported a record written while the lock was held past the timeout")
	}
	if a.healthy() == nil {
		t.Fatal("the writer is healthy after a record could not be written")
	}
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	deadline := time.Now().Add(30 * time.Second)
	for a.healthy() != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "after"})
	a.flush()
	recs, err := audit.Read(layout.Audit(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == audit.TypeRecordsLost || r.Fields[audit.FieldTool] == "refused" {
			t.Errorf("record %d %s %v: the refused call's record is neither written nor counted lost", r.Seq, r.Type, r.Fields)
		}
	}
	if last := recs[len(recs)-1]; last.Fields[audit.FieldTool] != "after" {
		t.Errorf("last record %v, want the one queued after the writer recovered", last.Fields)
	}
}

// TestLineQueueGate: a gated line waits for its gate and holds back the
// lines queued after it; a gate that says no drops its line and calls
// refused, and the lines after it are still written.
func TestLineQueueGate(t *testing.T) {
	var buf syncBuffer
	q := newLineQueue(&buf, nil)
	open := make(chan bool)
	refused := make(chan struct{}, 1)
	q.pushGated([]byte("call\n"), func() bool { return <-open }, nil, func() { refused <- struct{}{} })
	q.push([]byte("after\n"))
	time.Sleep(50 * time.Millisecond)
	if s := buf.String(); s != "" {
		t.Fatalf("wrote %q before the gate opened", s)
	}
	open <- true
	q.pushGated([]byte("refused\n"), func() bool { return <-open }, nil, func() { refused <- struct{}{} })
	q.push([]byte("last\n"))
	open <- false
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("refused was not called")
	}
	if !q.close(10 * time.Second) {
		t.Fatal("the queue did not drain")
	}
	if s := buf.String(); s != "call\nafter\nlast\n" {
		t.Fatalf("wrote %q", s)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAuditBurstSharesOneWrite: the records of calls read in one burst
// wait for the burst's last line (guard without now), and writeNow then
// puts them all in the file: at once, or, when the writer goroutine took
// some first (its group's millisecond had passed, as it may on a loaded
// machine), through it, which writeNow hurries; none is left waiting.
func TestAuditBurstSharesOneWrite(t *testing.T) {
	a, dir := testAuditor(t)
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	a.flush()
	var tickets []int64
	for i := range 3 {
		tickets = append(tickets, a.guard(audit.TypeToolCalled, ep, run, map[string]any{"n": i}, false))
	}
	a.writeNow()
	a.mu.Lock()
	for i, tk := range tickets {
		// writeNow's promise: written, or left hurried to the writer
		// goroutine, or in its hands already.
		if written, _ := a.recordedLocked(tk); !written && !a.urgent && a.writing.IsZero() {
			t.Errorf("call %d of the burst: after writeNow, not written, not hurried, not being written", i)
		}
	}
	a.mu.Unlock()
	for i, tk := range tickets {
		written := make(chan bool, 1)
		go func() { written <- a.whenRecorded(tk) }()
		select {
		case ok := <-written:
			if !ok {
				t.Fatalf("call %d of the burst: record not written", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d of the burst: record still waiting 10 s after writeNow", i)
		}
	}
	b, err := os.ReadFile(layout.Audit(dir))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"type":"tool_called"`); n != 3 {
		t.Fatalf("%d tool_called records in the file, want 3", n)
	}
}

// TestAuditHeadSyncedWhenIdle: the head is rewritten without its own
// fdatasync (audit.Options.LazyHead); a writer that goes idle makes it
// durable once auditHeadSync has passed since that rewrite (close does
// at once: audit.Log.Close).
func TestAuditHeadSyncedWhenIdle(t *testing.T) {
	a, _ := testAuditor(t)
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "one"}) // the head exists: rewritten in place from now on
	a.flush()
	a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "two"})
	a.flush()
	due := a.log.HeadDue()
	if due.IsZero() {
		t.Fatal("the head was synced with its group: want its fdatasync left for later")
	}
	deadline := due.Add(3 * time.Second)
	for !a.log.HeadDue().IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("the head's rewrite, due %v, was not synced by %v", due.Format(time.StampMilli), deadline.Format(time.StampMilli))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().Before(due) {
		t.Errorf("the head was synced before it was due")
	}
}
