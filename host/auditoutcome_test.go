package host_test

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestAuditVerifyNamesCallKilledBeforeItsResult: a host answers a call and
// is killed (SIGKILL) before the call's tool_result is in the log (another
// writer holds the log's lock from the moment the server got the call).
// The chain is intact, and audit verify still does not pass silently: it
// names the tool_called record whose outcome the log lacks.
func TestAuditVerifyNamesCallKilledBeforeItsResult(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")
	settledLog(t, layout.Audit(p.dir), 1)
	testenv.KillGroupOnCleanup(t, p.status().Execution.ProcessID)

	id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 3000})
	waitFile(t, p.path("counter/k.started"), "pid=") // forwarded: its tool_called is in the log
	lk, err := os.OpenFile(p.path(".mcpepoch/audit.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	wantText(t, c.response(id, waitLong), "count=1 revision=A")
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	if b, _ := os.ReadFile(layout.Audit(p.dir)); strings.Count(string(b), `"type":"tool_result"`) != 1 {
		t.Fatalf("the answered call's tool_result reached the log before the kill; the test needs it missing:\n%s", b)
	}

	out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "audit", "verify", "--dir", p.dir)
	if code != 0 || !strings.Contains(out.Stdout, "warning: ") ||
		!strings.Contains(out.Stdout, "tool_called slow_write (run ") ||
		!strings.Contains(out.Stdout, "its outcome is unknown") ||
		!strings.Contains(out.Stdout, "chain intact") || !strings.Contains(out.Stdout, "1 call(s) with no recorded outcome") {
		t.Fatalf("audit verify after the kill: exit %d, want 0 naming the call with no outcome\n%s", code, out)
	}
	if strings.Contains(out.Stdout, "tool_called version") {
		t.Errorf("audit verify names the answered call too:\n%s", out.Stdout)
	}
}

// TestAuditCallsEndedWithoutAnswerAreRecorded: a call the client cancels
// and a call still running when the client goes away end in call_aborted
// records naming them (cancelled, host_stopped), so that audit verify,
// after the session, names no call as one whose outcome is unknown.
func TestAuditCallsEndedWithoutAnswerAreRecorded(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	c := startRaw(t, p, nil)
	c.initialize()
	cancelled := c.call("slow_write", map[string]any{"key": "cancelled", "delayMs": 60000})
	c.call("slow_write", map[string]any{"key": "running", "delayMs": 60000})
	waitFile(t, p.path("counter/cancelled.started"), "pid=")
	waitFile(t, p.path("counter/running.started"), "pid=")
	c.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(cancelled)})
	c.stdin.Close() // the host waits for the running call, then stops its server
	<-c.done

	recs := parseAuditRecords(t, p.cli("audit", "show", "--dir", p.dir, "--type", "call_aborted", "--json").Stdout)
	reasons := map[string]string{}
	for _, r := range recs {
		reasons[r.Fields["request_id"].(string)], _ = r.Fields["reason"].(string)
	}
	if len(recs) != 2 || reasons[cancelled] != "cancelled" || !slices.Contains(slices.Collect(maps.Values(reasons)), "host_stopped") {
		t.Errorf("call_aborted records %v: want the cancelled call's (cancelled) and the running one's (host_stopped)", reasons)
	}
	out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "audit", "verify", "--dir", p.dir)
	if code != 0 || strings.Contains(out.Stdout, "warning") {
		t.Fatalf("audit verify: exit %d, want 0 without warnings\n%s", code, out)
	}
}
