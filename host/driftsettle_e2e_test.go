package host_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// newLazyProject is a project running testdata/servers/python/lazy.py (python3 -m app.server)
// whose tool "read" a person approved; c is its host's client.
func newLazyProject(t *testing.T) (*project, *raw) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is not on PATH: install Python 3 to run this test")
	}
	p := newProject(t, nil)
	if err := os.Mkdir(p.path("app"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("app/__init__.py", "")
	p.write("app/server.py", testenv.PythonServer(t, "lazy"))
	p.write("app/impl.py", "def run():\n    return 'approved code'\n")
	p.write("mcpepoch.toml", "command = [\"python3\", \"-m\", \"app.server\"]\n\n[grants]\nproof = [\"same-user\"]\nexempt = [\"ping\"]\n")
	c := startRaw(t, p, nil, "python3", "-m", "app.server")
	c.initialize()
	c.listTools()
	p.waitCatalog()
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")
	return p, c
}

// evilImpl is app/impl.py as saved after the approval: it leaves
// evil.ran in the project when it runs.
const evilImpl = "import os\nopen(os.path.join(os.path.dirname(__file__), '..', 'evil.ran'), 'w').close()\ndef run():\n    return 'unapproved code'\n"

// toucher rewrites path (with the same bytes) every 50 ms until the
// test ends: notifications under a hashed tree that never pause.
func toucher(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop) }); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				os.WriteFile(path, b, 0o644)
			}
		}
	}()
}

// A change on disk stops granted calls at once. A call sent right after
// code was saved (no wait for the host to notice) is held until the
// identity is computed again, and refused identity_drift: the saved code
// never runs under the approval. With a file under the hashed tree
// rewritten every 50 ms, which once kept the re-hash from ever starting,
// the same holds: the settle time has a cap. An exempt tool answers all
// along.
func TestDriftSettleCapped(t *testing.T) {
	t.Parallel()
	p, c := newLazyProject(t)

	// Saved, then called at once.
	p.write("app/impl.py", evilImpl)
	wantError(t, c.callWait("read", nil), host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
	if _, err := os.Stat(p.path("evil.ran")); err == nil {
		t.Fatal("the code saved right before the call ran under the approval")
	}

	// A new epoch on that code, approved; then a toucher, and new code
	// saved while it runs.
	p.write("app/impl.py", "def run():\n    return 'second approval'\n")
	p.record()
	p.waitCatalog()
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read") // app.impl is not imported yet
	toucher(t, p.path("app/__init__.py"))
	time.Sleep(500 * time.Millisecond) // past the settle time the toucher used to renew forever
	wantText(t, c.callWait("ping", nil), "pong")
	p.write("app/impl.py", evilImpl)
	wantError(t, c.callWait("read", nil), host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
	if _, err := os.Stat(p.path("evil.ran")); err == nil {
		t.Fatal("the code saved while a file was rewritten every 50 ms ran under the approval")
	}
	wantText(t, c.callWait("ping", nil), "pong")
}

// While the identity cannot be computed again after a change (a lockfile
// name on a directory), a granted call waits for a verdict a bounded time
// and is refused identity_unverified, naming why, without running, and
// status says the identity is unverified; once the change is undone the
// same grant works again.
func TestUnverifiedHoldBounded(t *testing.T) {
	t.Parallel()
	p, c := newLazyProject(t)
	wantText(t, c.callWait("read", nil), "approved code")
	if err := os.Mkdir(p.path("uv.lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := c.callWait("read", nil)
	wantError(t, r, host.CodeAuthorizationStale, "authorization_stale: identity_unverified:")
	if !strings.Contains(r.Error.Message, "uv.lock") {
		t.Errorf("the refusal does not say why the identity is unverified: %s", r.Error.Message)
	}
	if st := p.status(); !strings.Contains(st.IdentityUnverified, "calls that need a grant wait") {
		t.Errorf("status while the identity is unverified: identityUnverified = %q", st.IdentityUnverified)
	}
	wantText(t, c.callWait("ping", nil), "pong")
	if err := os.Remove(p.path("uv.lock")); err != nil {
		t.Fatal(err)
	}
	wantText(t, c.callWait("read", nil), "approved code")
	if st := p.status(); st.IdentityUnverified != "" {
		t.Errorf("status once the identity is computed again: identityUnverified = %q", st.IdentityUnverified)
	}
}
