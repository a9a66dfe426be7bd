package host_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// initParams are the params of a client initialize of the legacy era.
var initParams = map[string]any{
	"protocolVersion": legacyVersion,
	"capabilities":    map[string]any{},
	"clientInfo":      map[string]any{"name": "mcpepoch-host-test", "version": "0.1.0"},
}

// TestInitializeBeforeFirstBuildIsHeld: a client that connects before
// the project was ever built keeps its session. Its initialize is held
// while the server exits at once (a script whose code is missing) or
// cannot be executed (a binary not linked yet); other requests get "not
// built yet", never server_restarted; the build brings a server that
// answers the held initialize, exactly once.
func TestInitializeBeforeFirstBuildIsHeld(t *testing.T) {
	t.Parallel()
	t.Run("server exits", func(t *testing.T) {
		t.Parallel()
		// It lives long enough to be sent the initialize each time. The
		// request in the meantime is sent once the host gave up on it
		// (MaxCrashes quick exits): while crash recovery starts the next
		// server, a request is held for it, not refused, and that can
		// happen at any moment before.
		p := crashProject(t)
		p.server("[ -f dep ] || { echo 'dependency missing' >&2; sleep 0.5; exit 1; }\n", nil)
		os.Remove(p.path("dep"))
		c := startRaw(t, p, nil)
		heldInitialize(t, p, c, "not restarting it on its own", func() { p.write("dep", "") })
	})
	t.Run("binary missing", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, nil)
		if err := os.Rename(p.path("bin/fixture"), p.path("fixture.built")); err != nil {
			t.Fatal(err)
		}
		c := startRaw(t, p, nil, "./bin/fixture")
		heldInitialize(t, p, c, "not built yet", func() {
			if err := os.Rename(p.path("fixture.built"), p.path("bin/fixture")); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("entry missing", func(t *testing.T) {
		t.Parallel()
		// node dist/server.js before tsc wrote it: the runtime exists, the
		// entry it would load does not.
		p := newProject(t, nil)
		p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\nentry = \"server.sh\"\n\n[grants]\nexempt = [\"**\"]\n")
		if err := os.Rename(p.path("server.sh"), p.path("server.built")); err != nil {
			t.Fatal(err)
		}
		c := startRaw(t, p, nil)
		heldInitialize(t, p, c, "not built yet", func() {
			if s := c.stderr.String(); strings.Contains(s, "started pid") || strings.Contains(s, "times in a row") {
				t.Fatalf("a server whose entry is missing was launched:\n%s", s)
			}
			if err := os.Rename(p.path("server.built"), p.path("server.sh")); err != nil {
				t.Fatal(err)
			}
		})
		if s := c.stderr.String(); !strings.Contains(s, "server.sh not found") && !strings.Contains(s, "entry server.sh does not exist") {
			t.Errorf("the host does not name the missing entry:\n%s", s)
		}
	})
}

// heldInitialize sends initialize to a host whose server cannot start
// yet, waits for the host to log want, checks a request in the meantime
// is refused as not built, then runs build and a build signal and checks
// the held initialize is answered once and the session works.
func heldInitialize(t *testing.T, p *project, c *raw, want string, build func()) {
	t.Helper()
	id := c.request("initialize", initParams)
	waitStderr(t, c, want, func(s string) bool { return strings.Contains(s, want) })
	wantError(t, c.roundTrip("tools/list", nil), host.CodeServerUnavailable, "not built yet: run your build (")
	if rs := c.responses(id); len(rs) != 0 {
		t.Fatalf("initialize answered before any server started: %v", rs[0])
	}
	build()
	p.record()
	if r := c.response(id, waitLong); r.Error != nil {
		t.Fatalf("held initialize: %v", r)
	}
	c.notify("notifications/initialized", nil)
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call after the first build: %v", r)
	}
	if n := len(c.responses(id)); n != 1 {
		t.Errorf("initialize answered %d times, want once", n)
	}
}

// TestFirstStartWaitEnds: with no build within host.first_start_wait, the
// held initialize is answered "not built yet" (not server_restarted), and
// the host stays connected for a later build.
func TestFirstStartWaitEnds(t *testing.T) {
	t.Parallel()
	p := crashProject(t)
	os.Remove(p.path("dep"))
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[host]\nfirst_start_wait = \"1s\"\n\n[grants]\nexempt = [\"**\"]\n")
	c := startRaw(t, p, nil)
	id := c.request("initialize", initParams)
	r := c.response(id, waitLong)
	wantError(t, r, host.CodeServerUnavailable, "not built yet: run your build (")
	if !strings.Contains(r.Error.Message, "host.first_start_wait") {
		t.Errorf("the answer does not name the bound: %v", r)
	}
}
