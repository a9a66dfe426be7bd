package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestHostSaysConfigChanged: a running host whose mcpepoch.toml changed
// outside [grants] says so on the next build signal, in its log, and in
// status: those settings are not re-read while the client stays
// connected, the client must reconnect.
func TestHostSaysConfigChanged(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	h := startRawHost(t, p, "node", "dist/server.js")
	h.handshake()
	const note = "mcpepoch.toml changed settings outside [grants] since this host started; they are not re-read while the client stays connected: reconnect the client (restart its MCP server) to apply them"
	if out, _ := p.mcpepoch("status"); strings.Contains(out.Stdout, "config:") {
		t.Fatalf("status says the config changed before it did:\n%s", out)
	}
	f, err := os.OpenFile(p.path("mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[credentials.staging]\ntools = [\"inventory_adjust\"]\n")
	f.Close()
	// record says why nothing restarted.
	if rec := p.record(); !strings.Contains(rec, "the host keeps the settings it started with: reconnect the client") {
		t.Errorf("record after a settings change the host does not re-read:\n%s", rec)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.stderr.String(), note) {
		if time.Now().After(deadline) {
			t.Fatalf("host log does not say the config changed:\n%s", h.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, code := p.mcpepoch("status")
	if code != 0 || !strings.Contains(out.Stdout, "  config:   "+note+"\n") {
		t.Errorf("status: exit %d, does not say the config changed:\n%s", code, out)
	}
	if out, _ := p.mcpepoch("doctor"); !strings.Contains(out.Combined, "before mcpepoch.toml changed") || !strings.Contains(out.Combined, "outside [grants]") ||
		!strings.Contains(out.Combined, "fix: restart the server from the client") {
		t.Errorf("doctor does not say what of the change the host has not applied:\n%s", out)
	}
	out, _ = testenv.Run(t, p.dir, nil, p.bin, "status", "--json")
	if !strings.Contains(out.Stdout, `"configChanged": "`+note+`"`) {
		t.Errorf("status --json has no configChanged:\n%s", out)
	}

	// code = [...] in place of the inferred whole project hashes less: a
	// weakening of the floor, which neither the build nor the host
	// applies until a person accepts it; both say so.
	toml, err := os.ReadFile(p.path("mcpepoch.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.path("mcpepoch.toml"), append([]byte("code = [\"src\"]\n"), toml...), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec := p.record(); !strings.Contains(rec, `policy: mcpepoch.toml weakens the project's policy floor, not applied: code = ["src"]`) {
		t.Errorf("record after code = [\"src\"]:\n%s", rec)
	}
	if out, _ := p.mcpepoch("status"); !strings.Contains(out.Stdout, `policy:   code = ["src"] in mcpepoch.toml weakens the policy floor, not applied`) {
		t.Errorf("status after code = [\"src\"]:\n%s", out)
	}
}

// A [grants] policy changed in mcpepoch.toml is re-read on the next build
// signal. A change that strengthens it (exempt narrowed) raises the
// project's policy floor and is in force at once, in the same epoch: said
// in the host's log and in a policy_raised audit record.
func TestHostAppliesStrengthenedGrantsPolicyAtOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := p.host()
	if got := call(t, c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); !strings.Contains(got, "quantity=1") {
		t.Fatalf("adjust under exempt inventory_*: %q", got)
	}
	p.record() // the build the host started from
	b, err := os.ReadFile(p.path("mcpepoch.toml"))
	if err != nil {
		t.Fatal(err)
	}
	narrowed := strings.Replace(string(b), `exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`, 1)
	if err := os.WriteFile(p.path("mcpepoch.toml"), []byte(narrowed), 0o644); err != nil {
		t.Fatal(err)
	}
	p.record() // identical bytes: the epoch stays, the stricter policy applies anyway
	if _, rerr := c.Call("inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); rerr == nil || !strings.Contains(rerr.Error(), "authorization_required") {
		t.Errorf("adjust in the same epoch, no longer exempt: %v, want authorization_required", rerr)
	}
	if got := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}); !strings.Contains(got, "quantity=1") {
		t.Errorf("lookup, still exempt: %q", got)
	}
	if !strings.Contains(c.Stderr(), `grants policy re-read from mcpepoch.toml in force at once (it raised the policy floor): exempt ["inventory_*"] → ["inventory_lookup"]`) {
		t.Errorf("host log does not say the stricter policy is in force:\n%s", c.Stderr())
	}
	if out, _ := p.mcpepoch("status"); strings.Contains(out.Stdout, "config:") || strings.Contains(out.Stdout, "policy:") {
		t.Errorf("status still names a config change once it is in force:\n%s", out)
	}
	// doctor asks the host: a change in force needs no restart.
	if out, _ := p.mcpepoch("doctor"); strings.Contains(out.Combined, "before mcpepoch.toml changed") {
		t.Errorf("doctor asks for a restart once the change is in force:\n%s", out)
	}
	out, _ := p.mcpepoch("audit", "show", "--json")
	if !strings.Contains(out.Stdout, `"policy_raised"`) {
		t.Errorf("no policy_raised record in the audit log:\n%s", out)
	}
}
