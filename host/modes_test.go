package host_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// Restart mode manual: a build signal that finds new code restarts
// nothing, the hook says so, calls keep reaching the old epoch, and
// mcpepoch restart performs the held restart.
func TestRestartModeManual(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	c := startRaw(t, p, []string{"--restart", "manual"})
	c.initialize()
	before := p.status()

	p.server("", map[string]string{"FIXTURE_REVISION": "B"})
	out := p.cli("record", "--dir", p.dir)
	want := "running server unchanged: pid=" + strconv.Itoa(before.Execution.ProcessID) + " epoch=" + string(before.Execution.Epoch) + " (restart held: run 'mcpepoch restart')"
	if !strings.Contains(out.Stderr, want) {
		t.Fatalf("record in manual mode said:\n%s\nwant the line %q", out.Stderr, want)
	}
	held := p.status()
	if !held.HeldRestart || held.Execution.Epoch != before.Execution.Epoch || held.Mode != host.ModeManual {
		t.Fatalf("after the signal: restartHeld %v, epoch %s (was %s), mode %s", held.HeldRestart, held.Execution.Epoch, before.Execution.Epoch, held.Mode)
	}
	wantText(t, c.callWait("version", nil), "revision=A")
	if n := len(c.notifications("notifications/tools/list_changed")); n != 0 {
		t.Errorf("%d list_changed before the restart, want 0", n)
	}

	p.restart()
	after := p.status()
	if after.Execution.Epoch == before.Execution.Epoch || after.HeldRestart {
		t.Fatalf("after mcpepoch restart: epoch %s (was %s), restartHeld %v", after.Execution.Epoch, before.Execution.Epoch, after.HeldRestart)
	}
	c.waitNotifications("notifications/tools/list_changed", 1, waitLong)
	wantText(t, c.callWait("version", nil), "revision=B")
}

// Restart mode close: new code stops the server and ends the host, with the
// reason on stderr, so the client reconnects and initializes again; the hook
// says the connection was closed, not that a server restarted.
func TestRestartModeClose(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	c := startRaw(t, p, []string{"--restart", "close"})
	c.initialize()
	before := p.status()

	p.server("", map[string]string{"FIXTURE_REVISION": "B"})
	out := p.cli("record", "--dir", p.dir)
	want := "server stopped: epoch " + string(before.Execution.Epoch) + " ended, pid " + strconv.Itoa(before.Execution.ProcessID) + "; connection closed, the client must reconnect (restart mode close)"
	if !strings.Contains(out.Stderr, want) || strings.Contains(out.Stderr, "server restarted") {
		t.Fatalf("record in close mode said:\n%s\nwant the line %q and no restart", out.Stderr, want)
	}
	select {
	case <-c.done:
	case <-time.After(waitLong):
		t.Fatalf("the host did not exit after closing the connection")
	}
	if c.waitErr == nil {
		t.Errorf("the host exited with status 0; want a failure status so the client sees the connection end")
	}
	if !strings.Contains(c.stderr.String(), host.ErrClosed.Error()) {
		t.Errorf("host stderr does not give the reason %q:\n%s", host.ErrClosed, c.stderr.String())
	}
	if gone, detail := testenv.GroupGone(before.Execution.ProcessID); !gone {
		t.Errorf("the old server is still running: %s", detail)
	}
}
