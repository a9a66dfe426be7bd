package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// editToml replaces old with repl in the project's mcpepoch.toml.
func (p *project) editToml(old, repl string) {
	p.t.Helper()
	b, err := os.ReadFile(p.path("mcpepoch.toml"))
	if err != nil {
		p.t.Fatal(err)
	}
	s := strings.Replace(string(b), old, repl, 1)
	if s == string(b) {
		p.t.Fatalf("mcpepoch.toml has no %q", old)
	}
	if err := os.WriteFile(p.path("mcpepoch.toml"), []byte(s), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// floorProject is the example with only inventory_lookup exempt, served by
// a host that made that policy the project's floor (first use).
func floorProject(t *testing.T) (*project, *testenv.Client) {
	t.Helper()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`)
	c := p.host()
	refused(t, c, "before any edit")
	p.record() // the build the host started from
	return p, c
}

// refused calls inventory_adjust, which must be refused for lack of a
// grant, and returns the error's data.
func refused(t *testing.T, c *testenv.Client, when string) string {
	t.Helper()
	_, rerr := c.Call("inventory_adjust", map[string]any{"sku": "bolt", "delta": 1})
	if rerr == nil || !strings.Contains(rerr.Error(), "authorization_required") {
		t.Fatalf("adjust %s: %v, want authorization_required", when, rerr)
	}
	return string(rerr.Data)
}

// rebuild changes the server and records it, so that a policy staged for
// the next epoch would be in force.
func (p *project) rebuild(t *testing.T, c *testenv.Client, rev string) {
	t.Helper()
	p.setRevision(rev)
	p.build()
	p.record()
	if _, err := c.WaitListChanged(1, 30*time.Second); err != nil {
		t.Fatalf("no list_changed after the rebuild: %v", err)
	}
}

// An agent that writes proof = ["same-user"] into mcpepoch.toml while the
// host runs cannot then approve itself with approve --yes, not even in the
// next epoch: the weakening is not applied, and the host's log, status,
// the audit log and the refusal say so, without a command that lifts it.
func TestEditedProofDoesNotLetApproveYesGrant(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, "exempt = [\"inventory_lookup\"]\nproof = [\"same-user\"]")
	p.rebuild(t, c, "B")
	out, code := p.mcpepoch("approve", "--yes", "--all")
	if code == 0 {
		t.Fatalf("approve --yes after the edit: exit 0, want a refusal\n%s", out)
	}
	if !strings.Contains(out.Stderr, `grants.proof = ["same-user"] (in force: ["terminal", "client"] (default: no authenticator is enrolled))`) {
		t.Errorf("the refusal does not name the weakening not applied:\n%s", out)
	}
	show, _ := p.mcpepoch("policy")
	if !strings.Contains(show.Stdout, `  grants.proof: floor ["terminal", "client"] (default: no authenticator is enrolled) → mcpepoch.toml ["same-user"]`) ||
		!strings.Contains(show.Stdout, "proof required to accept a weakening: terminal, client (the default: no authenticator is enrolled)") {
		t.Errorf("policy show does not name the default proof in force:\n%s", show)
	}
	data := refused(t, c, "after approve --yes")
	if !strings.Contains(data, "policyNotApplied") || !strings.Contains(data, "grants.proof") {
		t.Errorf("error.data does not name the weakening: %s", data)
	}
	if strings.Contains(data, "--yes") || strings.Contains(out.Stderr, "--yes") {
		t.Errorf("a refusal teaches --yes:\n%s\n%s", data, out)
	}
	checkNotApplied(t, p, c, "grants.proof")
}

// A tool added to grants.exempt while the host runs stays under grants,
// in this epoch and the next.
func TestExemptGainingToolDoesNotLetCallThrough(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	p.record()
	refused(t, c, "after exempt gained it")
	p.rebuild(t, c, "B")
	data := refused(t, c, "in the next epoch")
	if !strings.Contains(data, "grants.exempt") {
		t.Errorf("error.data does not name the weakening: %s", data)
	}
	checkNotApplied(t, p, c, "grants.exempt")
}

// A weakening written between two runs of the host is held at the floor
// the first run left.
func TestWeakeningBetweenHostStartsNotApplied(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	c.Close()
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_*"]`)
	c = p.host()
	refused(t, c, "in a new host after exempt gained it")
	checkNotApplied(t, p, c, "grants.exempt")
}

// checkNotApplied checks that the host's log, status (text and --json) and
// the audit log name setting as not applied.
func checkNotApplied(t *testing.T, p *project, c *testenv.Client, setting string) {
	t.Helper()
	if !strings.Contains(c.Stderr(), "mcpepoch.toml weakens the project's policy floor, not applied: "+setting) {
		t.Errorf("host log does not name the weakening:\n%s", c.Stderr())
	}
	if out, _ := p.mcpepoch("status"); !strings.Contains(out.Stdout, "  policy:   "+setting+" = ") {
		t.Errorf("status does not name the weakening:\n%s", out)
	}
	if out, _ := p.mcpepoch("status", "--json"); !strings.Contains(out.Stdout, `"policyNotApplied"`) || !strings.Contains(out.Stdout, `"setting": "`+setting+`"`) {
		t.Errorf("status --json has no policyNotApplied:\n%s", out)
	}
	if out, _ := p.mcpepoch("audit", "show", "--json"); !strings.Contains(out.Stdout, `"policy_not_applied"`) {
		t.Errorf("no policy_not_applied record in the audit log:\n%s", out)
	}
}

// A credential scope's approval settings are in the floor: per_call turned
// off and the tool dropped from its tools, written between two runs of the
// host, are not applied: the call still needs an approval per call that
// names the scope.
func TestCredentialScopeWeakeningNotApplied(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`)
	p.editToml(`tools = ["inventory_order"]`, "tools = [\"inventory_order\"]\nper_call = true")
	c := p.host()
	data := refusedOrder(t, c, "under the first floor")
	c.Close()
	p.editToml("tools = [\"inventory_order\"]\nper_call = true", `tools = []`)
	c = p.host()
	if again := refusedOrder(t, c, "after the weakening"); again != data {
		t.Errorf("the refusal changed with the weakening:\n%s\n%s", data, again)
	}
	checkNotApplied(t, p, c, "credentials.inventory-supplier.per_call")
	if !strings.Contains(c.Stderr(), `credentials.inventory-supplier.tools = [] (in force: ["inventory_order"])`) {
		t.Errorf("host log does not name the tool dropped from the scope:\n%s", c.Stderr())
	}
}

// per_call turned on for a scope while the host runs is in force at once,
// in the same epoch, and raises the floor.
func TestCredentialPerCallAppliesAtOnce(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	if _, rerr := c.Call("inventory_order", map[string]any{"sku": "bolt", "qty": 1}); rerr == nil || !strings.Contains(string(rerr.Data), `"perCall":false`) {
		t.Fatalf("order before the edit: %v, want authorization_required, not per call", rerr)
	}
	p.editToml(`tools = ["inventory_order"]`, "tools = [\"inventory_order\"]\nper_call = true")
	// Identical bytes: the epoch stays; no grant to revoke, none said.
	if rec := p.record(); !strings.Contains(rec, "running server unchanged") || strings.Contains(rec, "revoked") {
		t.Errorf("record after per_call was turned on, with no grant:\n%s", rec)
	}
	refusedOrder(t, c, "after per_call was turned on")
	if !strings.Contains(c.Stderr(), "in force at once (it raised the policy floor): credentials.inventory-supplier.per_call false → true") {
		t.Errorf("host log does not say per_call is in force:\n%s", c.Stderr())
	}
}

// refusedOrder calls inventory_order, which must be refused as needing an
// approval per call that names the supplier scope, and returns what
// error.data says of the scope.
func refusedOrder(t *testing.T, c *testenv.Client, when string) string {
	t.Helper()
	_, rerr := c.Call("inventory_order", map[string]any{"sku": "bolt", "qty": 1})
	if rerr == nil || !strings.Contains(rerr.Error(), "authorization_required") {
		t.Fatalf("order %s: %v, want authorization_required", when, rerr)
	}
	var d struct {
		CredentialScope []string `json:"credentialScope"`
		PerCall         bool     `json:"perCall"`
	}
	if err := json.Unmarshal(rerr.Data, &d); err != nil || !d.PerCall || !slices.Equal(d.CredentialScope, []string{"inventory-supplier"}) {
		t.Fatalf("order %s: error.data %s (%v), want perCall and the supplier scope", when, rerr.Data, err)
	}
	return fmt.Sprint(d)
}

// A policy raised while the host runs ends, in the same epoch, the live
// grants it no longer counts: one covering a tool that became per call,
// one approved at a proof level that no longer counts. Each is audited
// grant_revoked with reason policy_raised, and the next call says why.
func TestRaisedPolicyRevokesGrantsItNoLongerCounts(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, "exempt = [\"inventory_lookup\"]\nproof = [\"same-user\"]")
	c := p.host()
	refused(t, c, "before any approval")
	p.record() // the build the host started from
	approveYes := func(args ...string) {
		t.Helper()
		if out, code := p.mcpepoch(append([]string{"approve", "--yes"}, args...)...); code != 0 {
			t.Fatalf("approve --yes %v: exit %d\n%s", args, code, out)
		}
	}
	adjust := map[string]any{"sku": "bolt", "delta": 1}
	approveYes("--all")
	call(t, c, "inventory_adjust", adjust)

	p.editToml(`tools = ["inventory_order"]`, "tools = [\"inventory_order\"]\nper_call = true")
	// Identical bytes: the epoch stays, and record says the grant ended.
	if rec := p.record(); !strings.Contains(rec, "running server unchanged") || !strings.Contains(rec, "; 1 grant revoked: mcpepoch.toml raised the approval policy (approve again: mcpepoch approve)") {
		t.Errorf("record after per_call was turned on does not say the grant ended:\n%s", rec)
	}
	data := refused(t, c, "after per_call was turned on")
	if !strings.Contains(data, `"policyRaised":"tool inventory_order now needs an approval for each call"`) {
		t.Errorf("the refusal does not say why the grant ended: %s", data)
	}
	approveYes("--tools", "inventory_adjust")
	call(t, c, "inventory_adjust", adjust)

	p.editToml(`proof = ["same-user"]`, `proof = ["terminal"]`)
	p.record()
	_, rerr := c.Call("inventory_adjust", adjust)
	if rerr == nil || !strings.Contains(rerr.Error(), "raised the approval policy (approved with proof same-user, which no longer counts (now: terminal))") {
		t.Errorf("adjust after proof was raised: %v, want the grant revoked by the raised policy", rerr)
	}
	out, _ := p.mcpepoch("audit", "show", "--json")
	n := 0
	for _, l := range strings.Split(out.Stdout, "\n") {
		if strings.Contains(l, `"type":"grant_revoked"`) && strings.Contains(l, `"reason":"policy_raised"`) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d grant_revoked records with reason policy_raised, want 2:\n%s", n, out)
	}
}
