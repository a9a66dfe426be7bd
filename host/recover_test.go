package host_test

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestIdleExitIsNotACrash: a server that exits 0 on its own (an idle
// timeout) is started again, under a new epoch, by the next request, as
// often as it idles: it never counts toward giving up.
func TestIdleExitIsNotACrash(t *testing.T) {
	t.Parallel()
	// Idle for 1 s after its last message: on a loaded machine the host's
	// messages of one session (initialize, tools/list, the call) can be
	// that far apart, and a server that exits between them fails the call
	// as one that exited while starting, which this test is not about.
	p := newProject(t, map[string]string{"FIXTURE_IDLE_EXIT_MS": "1000"})
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	epochs := map[string]bool{}
	for i := 0; i < 8; i++ { // more than MaxCrashes+1 (6) exits, each within QuickCrash
		waitStderr(t, c, "an idle exit", func(s string) bool { return strings.Count(s, "an idle exit, not a crash") > i })
		if r := c.callWait("version", nil); r.Error != nil {
			t.Fatalf("call %d after an idle exit: %v", i, r)
		}
		st := p.status()
		if st.Crashes != 0 || st.GaveUp {
			t.Fatalf("after idle exit %d: %d quick crashes counted, gave up %v", i, st.Crashes, st.GaveUp)
		}
		if st.Execution != nil {
			epochs[string(st.Execution.Epoch)] = true
		}
	}
	if len(epochs) < 7 {
		t.Errorf("%d epochs over 8 idle restarts, want a new epoch each time", len(epochs))
	}
}

// crashProject is a project whose server exits 1 at once while the file
// dep is missing, as a server does when a dependency is gone.
func crashProject(t *testing.T) *project {
	p := newProject(t, nil)
	p.server("[ -f dep ] || { echo 'dependency missing' >&2; exit 1; }\n", nil)
	p.write("dep", "")
	return p
}

// killServer kills the current server with SIGKILL (a crash) and waits
// for the host to log the exit.
func killServer(t *testing.T, p *project, c *raw) {
	t.Helper()
	pid := p.status().Execution.ProcessID
	n := strings.Count(c.stderr.String(), "exited on its own")
	syscall.Kill(-pid, syscall.SIGKILL)
	waitStderr(t, c, "the crash", func(s string) bool { return strings.Count(s, "exited on its own") > n })
}

// TestCallRightAfterCrashIsHeld: a call that arrives while the host waits
// to restart a crashed server is held like one during a rebuild, then
// answered by the new server.
func TestCallRightAfterCrashIsHeld(t *testing.T) {
	t.Parallel()
	p := crashProject(t)
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	killServer(t, p, c)
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call right after the crash: %v", r)
	}
}

// TestGivingUpIsVisibleAndRecoverable: a server that keeps crashing is
// restarted MaxCrashes times, counted once each, and the host says it
// gave up only after the last; status exits 4 and says what brings it
// back; a change to a hashed file (server.sh) brings it back.
func TestGivingUpIsVisibleAndRecoverable(t *testing.T) {
	t.Parallel()
	p := crashProject(t)
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	os.Remove(p.path("dep"))
	killServer(t, p, c)
	waitStderr(t, c, "giving up", func(s string) bool { return strings.Contains(s, "not restarting it on its own") })

	log := lines(c.stderr.String())
	starts, gaveUp := 0, -1
	for i, l := range log {
		if strings.Contains(l, ": started pid ") {
			starts++
			if gaveUp >= 0 {
				t.Errorf("a start logged after giving up:\n%s", l)
			}
		}
		if strings.Contains(l, "not restarting it on its own") && gaveUp < 0 {
			gaveUp = i
		}
	}
	if starts != 1+5 {
		t.Errorf("%d starts, want the first and 5 restarts (MaxCrashes):\n%s", starts, c.stderr.String())
	}
	out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "status", "--dir", p.dir)
	if code != 4 || !strings.Contains(out.Stdout, "mcpepoch restart") || !strings.Contains(out.Stdout, "hashes") || !strings.Contains(out.Stdout, "stderr:   dependency missing") {
		t.Errorf("status after giving up: exit %d, want 4, what brings it back and the server's last stderr:\n%s", code, out)
	}
	wantError(t, c.callWait("version", nil), host.CodeServerUnavailable, "server_unavailable")

	p.server("", nil) // the fix: server.sh no longer needs dep
	deadline := time.Now().Add(waitLong)
	for st := p.statusGaveUp(); st.State != host.StateReady || st.GaveUp; st = p.statusGaveUp() {
		if time.Now().After(deadline) {
			t.Fatalf("state %s (gave up %v) %s after server.sh changed, want ready", st.State, st.GaveUp, waitLong)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call after the fix: %v", r)
	}
}

// TestGivingUpClosesInCloseMode: in restart mode close, giving up closes
// the connection, so the client shows the failure.
func TestGivingUpClosesInCloseMode(t *testing.T) {
	t.Parallel()
	p := crashProject(t)
	c := startRaw(t, p, []string{"--restart", "close"})
	c.initialize()
	c.listTools()
	os.Remove(p.path("dep"))
	killServer(t, p, c)
	select {
	case <-c.done:
	case <-time.After(waitLong):
		t.Fatalf("host still connected %s after the crash loop began, in restart mode close", waitLong)
	}
	if !strings.Contains(c.stderr.String(), "the server kept exiting: connection closed") {
		t.Errorf("host stderr does not say why it closed:\n%s", c.stderr.String())
	}
}

// waitStderr polls the host's stderr until cond holds, for up to waitLong.
func waitStderr(t *testing.T, c *raw, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond(c.stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; host stderr:\n%s", waitLong, what, c.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// statusGaveUp is status for a host that may have given up on its server
// (mcpepoch status then exits 4).
func (p *project) statusGaveUp() host.Status {
	p.t.Helper()
	out, code := testenv.Run(p.t, p.dir, nil, mcpepoch(p.t), "status", "--dir", p.dir, "--json")
	var all []host.Status
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil || len(all) != 1 || (code != 0) != all[0].GaveUp {
		p.t.Fatalf("status --json: exit %d, %v, %d hosts\n%s", code, err, len(all), out)
	}
	return all[0]
}

// TestIdleExitReplacementNamesWhatChanged: when the code changed while no
// server ran (it exited 0 on its own, and nothing was built since), the
// epoch the next request starts is recorded as a replacement that names
// the changed file, as a build's replacement does.
func TestIdleExitReplacementNamesWhatChanged(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_IDLE_EXIT_MS": "1000"})
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	waitStderr(t, c, "an idle exit", func(s string) bool { return strings.Contains(s, "an idle exit, not a crash") })
	p.server("# edited, not built\n", map[string]string{"FIXTURE_IDLE_EXIT_MS": "1000"})
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call after the idle exit: %v", r)
	}
	var found bool
	for _, r := range p.auditRecords(audit.TypeServerReplaced) {
		changed, _ := r.Fields["changed"].([]any)
		for _, ch := range changed {
			found = found || ch == "server.sh"
		}
		if !found {
			t.Errorf("server_replaced after the idle exit: changed = %v, want server.sh named (fields %v)", r.Fields["changed"], r.Fields)
		}
	}
	if !found {
		t.Fatal("no server_replaced record names server.sh")
	}
}
