package host_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
)

// drainProject is a fixture project whose mcpepoch.toml sets
// [host] settings (TOML lines).
func drainProject(t *testing.T, hostSettings string) *project {
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[host]\n"+hostSettings+"\n[grants]\nexempt = [\"**\"]\n")
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter, "FIXTURE_REVISION": "A"})
	return p
}

// A call the old server finishes during a restart's drain gets its own
// answer, recorded under the old epoch, not server_restarted; the new
// epoch serves what comes after.
func TestRestartDrainDeliversAnswer(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `drain = "10s"`)
	c := startRaw(t, p, nil)
	c.initialize()
	old := p.status().Execution.Epoch

	id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 1500})
	waitFor(t, waitLong, "the fixture to start the write", func() bool { return p.read("counter/k.started") != "" })
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter, "FIXTURE_REVISION": "B"})
	r := p.background("restart", "--dir", p.dir)
	resp := c.response(id, waitLong)
	r.wait(t)
	wantText(t, resp, "count=1")
	wantText(t, c.callWait("version", nil), "revision=B")
	if n := len(c.responses(id)); n != 1 {
		t.Errorf("%d responses to the write, want 1", n)
	}
	var results int
	for _, rec := range p.auditRecords("tool_result") {
		if rec.Fields["tool"] == "slow_write" {
			results++
			if rec.Epoch != string(old) {
				t.Errorf("the drained answer is recorded under epoch %s, want the old one %s", rec.Epoch, old)
			}
		}
	}
	if recs := p.auditRecords("call_aborted"); len(recs) > 0 {
		t.Errorf("call_aborted records for a call that was answered: %v", recs)
	}
	if results != 1 {
		t.Errorf("%d tool_result records of slow_write, want 1", results)
	}
}

// A call still unanswered when the drain ends gets one server_restarted,
// after the restart's notifications/tools/list_changed, and is not run
// again.
func TestRestartDrainEndsUnanswered(t *testing.T) {
	t.Parallel()
	for _, drain := range []string{"0s", "300ms"} {
		t.Run(drain, func(t *testing.T) {
			t.Parallel()
			p := drainProject(t, `drain = "`+drain+`"`)
			c := startRaw(t, p, nil)
			c.initialize()
			id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 4000})
			waitFor(t, waitLong, "the fixture to start the write", func() bool { return p.read("counter/k.started") != "" })
			p.restart()
			resp := c.response(id, waitLong)
			wantError(t, resp, host.CodeServerRestarted, "server_restarted:")
			if n := p.status().InFlight; n != 0 {
				t.Errorf("status after the restart ended the call: inFlight %d, want 0", n)
			}
			c.waitNotifications("notifications/tools/list_changed", 1, waitLong)
			if n := c.notifications("notifications/tools/list_changed")[0]; n.seq > resp.seq {
				t.Errorf("list_changed came after the error of the call the restart ended (messages %d, %d): want it first", n.seq, resp.seq)
			}
			time.Sleep(4500 * time.Millisecond) // a repeated run would finish its write by now
			if n := len(c.responses(id)); n != 1 {
				t.Errorf("%d responses to the write, want 1", n)
			}
			if started := lines(p.read("counter/k.started")); len(started) != 1 {
				t.Errorf("the write started %d times, want 1", len(started))
			}
		})
	}
}

// Held calls wait for the epoch the last of queued restarts leaves
// running: a restart that finds another queued behind it does not
// release them into its own epoch, which that one replaces.
func TestRestartQueuedKeepsHeldCalls(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `drain = "0s"`)
	// A slow start, so that the second restart is queued before the
	// first one's server is up.
	p.server("sleep 1\n", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	c := startRaw(t, p, nil)
	c.initialize()
	first := p.background("restart", "--dir", p.dir)
	p.waitState(host.StateIdentityPending, waitLong)
	second := p.background("restart", "--dir", p.dir)
	waitFor(t, waitLong, "the second restart to be queued", func() bool {
		return strings.Contains(c.stderr.String(), "queued behind the restart under way")
	})
	id := c.call("version", nil)
	first.wait(t)
	second.wait(t)
	resp := c.response(id, waitLong)
	if resp.Error != nil {
		t.Fatalf("the held call: %v", resp)
	}
	last := p.waitState(host.StateReady, waitLong).Execution.Epoch
	var epochs []string
	for _, rec := range p.auditRecords("tool_called") {
		if rec.Fields["tool"] == "version" {
			epochs = append(epochs, rec.Epoch)
		}
	}
	if len(epochs) != 1 || epochs[0] != string(last) {
		t.Errorf("the held call ran in epochs %v, want once in the last one, %s", epochs, last)
	}
}

// With host.drain_start = "during" the new server starts while the old
// one drains: the new epoch answers calls before the old one's last
// answer, which is still delivered.
func TestRestartDrainDuring(t *testing.T) {
	t.Parallel()
	p := drainProject(t, "drain = \"20s\"\ndrain_start = \"during\"")
	c := startRaw(t, p, nil)
	c.initialize()
	id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 3000})
	waitFor(t, waitLong, "the fixture to start the write", func() bool { return p.read("counter/k.started") != "" })
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter, "FIXTURE_REVISION": "B"})
	p.restart()
	v := c.callWait("version", nil)
	wantText(t, v, "revision=B")
	resp := c.response(id, waitLong)
	wantText(t, resp, "count=1")
	if v.seq > resp.seq {
		t.Errorf("the new epoch answered after the old one's drained answer: want it to start during the drain")
	}
}

// The client's cancellation of a call the old server drains reaches that
// server, whose stdin is still open, and a drain that owes nothing more
// ends.
func TestRestartDrainPassesCancel(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `drain = "20s"`)
	c := startRaw(t, p, nil)
	c.initialize()
	id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 5000})
	waitFor(t, waitLong, "the fixture to start the write", func() bool { return p.read("counter/k.started") != "" })
	r := p.background("restart", "--dir", p.dir)
	waitFor(t, waitLong, "the drain", func() bool { return strings.Contains(c.stderr.String(), "(host.drain) for the answers") })
	c.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "test"})
	r.wait(t)
	if n := p.read("counter/k.count"); n != "" {
		t.Errorf("the cancelled write ran to its end (count %q): the cancellation did not reach the draining server", n)
	}
	if rs := c.responses(id); len(rs) != 0 {
		t.Errorf("the cancelled call was answered: %v", rs)
	}
}

// A queued build signal that finds the code unchanged leaves the epoch
// the restart before it started, and the held calls go there.
func TestRestartQueuedUnchangedReleasesHeldCalls(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `drain = "0s"`)
	p.server("sleep 1\n", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	c := startRaw(t, p, nil)
	c.initialize()
	first := p.background("restart", "--dir", p.dir)
	p.waitState(host.StateIdentityPending, waitLong)
	second := p.background("record", "--dir", p.dir)
	waitFor(t, waitLong, "the build signal to be queued", func() bool {
		return strings.Contains(c.stderr.String(), "queued behind the restart under way")
	})
	id := c.call("version", nil)
	first.wait(t)
	second.wait(t)
	if resp := c.response(id, waitLong); resp.Error != nil {
		t.Fatalf("the held call: %v", resp)
	}
	if s := p.status(); s.State != host.StateReady {
		t.Errorf("state %s after both, want ready", s.State)
	}
}
