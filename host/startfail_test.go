package host_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// brokenServer makes server.sh print a traceback to stderr and exit 1
// before the server answers anything: a build whose output fails at
// start (a syntax error copied to dist/).
func brokenServer(p *project) {
	p.server("echo 'server.js:3: SyntaxError: Unexpected identifier' >&2\necho '    at wrapSafe (node:internal/modules/cjs/loader)' >&2\nexit 1\n", nil)
}

// TestBuildThatFailsAtStartIsRetriedAndWatched: a build whose server
// exits while it starts leaves the host as a crash does: the answer to
// the build says the server is down, why (the server's own stderr) and
// what comes next; the host tries again with backoff, gives up after the
// sixth failed start in a row (status exits 4 and says what brings it
// back), and a fix of a hashed file with no build brings the server back.
func TestBuildThatFailsAtStartIsRetriedAndWatched(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()

	brokenServer(p)
	out, _ := testenv.Run(t, p.dir, nil, mcpepoch(t), "record", "--dir", p.dir)
	for _, want := range []string{"restart failed: server down: ", "the server exited", "starts it again in 100ms", "the server's stderr ended with:", "  server.js:3: SyntaxError: Unexpected identifier"} {
		if !strings.Contains(out.Stderr, want) {
			t.Errorf("record's answer does not say %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"state unknown", "host error"} {
		if strings.Contains(out.Stderr, bad) {
			t.Errorf("record's answer says %q of a host that knows the server is down:\n%s", bad, out)
		}
	}

	waitStderr(t, c, "giving up", func(s string) bool { return strings.Contains(s, "not restarting it on its own") })
	starts := strings.Count(c.stderr.String(), ": started pid ")
	if starts != 1+1+5 {
		t.Errorf("%d starts, want the first, the build's and 5 more (MaxCrashes):\n%s", starts, c.stderr.String())
	}
	st, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "status", "--dir", p.dir)
	if code != 4 || !strings.Contains(st.Stdout, "mcpepoch restart") || !strings.Contains(st.Stdout, "hashes") {
		t.Errorf("status after the host gave up: exit %d, want 4 and what brings it back:\n%s", code, st)
	}

	p.server("", nil) // the fix, with no build
	deadline := time.Now().Add(waitLong)
	for st := p.statusGaveUp(); st.State != host.StateReady || st.GaveUp; st = p.statusGaveUp() {
		if time.Now().After(deadline) {
			t.Fatalf("state %s (gave up %v) %s after server.sh was fixed, want ready", st.State, st.GaveUp, waitLong)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call after the fix: %v", r)
	}
}

// TestRestartThatFailsAtStartSaysWhy: mcpepoch restart of a server that
// exits while it starts says the server is down and shows its stderr,
// once, not "host error: host error …".
func TestRestartThatFailsAtStartSaysWhy(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	brokenServer(p)
	out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "restart", "--dir", p.dir)
	if code == 0 || !strings.Contains(out.Stderr, "restart failed: server down: ") || !strings.Contains(out.Stderr, "SyntaxError: Unexpected identifier") ||
		strings.Contains(out.Stderr, "host error") {
		t.Errorf("restart of a server that fails at start: exit %d, want non-zero, the server down and its stderr:\n%s", code, out)
	}
	waitStderr(t, c, "a retry", func(s string) bool { return strings.Count(s, ": started pid ") > 2 })
}
