package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// mcpepoch policy shows a weakening setting by setting; policy accept
// refuses --yes and a process with no terminal of its own under the
// default floor, accepts a person at a terminal (the test build's stand-in),
// audits policy_accepted, and a running host reads the accepted floor at
// its next build signal and puts it in force from the next epoch.
func TestPolicyAcceptAtTerminal(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	out, code := p.mcpepoch("policy")
	if code != 0 || !strings.Contains(out.Stdout, `  grants.exempt: floor ["inventory_lookup"] → mcpepoch.toml ["inventory_lookup", "inventory_adjust"] (WEAKER: not applied; in force ["inventory_lookup"])`) {
		t.Fatalf("policy show: exit %d, does not show the weakening:\n%s", code, out)
	}
	if out, code := p.mcpepoch("policy", "accept", "--yes"); code == 0 || !strings.Contains(out.Stderr, "not accepted: --yes proves no person") {
		t.Errorf("accept --yes under the default floor: exit %d\n%s", code, out)
	}
	if out, code := p.mcpepoch("policy", "accept"); code == 0 || !strings.Contains(out.Stderr, "not accepted:") {
		t.Errorf("accept without a terminal: exit %d\n%s", code, out)
	}
	refused(t, c, "after the refused accepts")
	out, code = testenv.Run(t, p.dir, []string{"MCPEPOCH_TEST_PERSON=1"}, p.bin, "policy", "accept")
	if code != 0 || !strings.Contains(out.Stderr, `  grants.exempt: ["inventory_lookup"] → ["inventory_lookup", "inventory_adjust"]`) ||
		!strings.Contains(out.Stderr, "accepted (proof terminal)") {
		t.Fatalf("accept at a terminal: exit %d\n%s", code, out)
	}
	if out, _ := p.mcpepoch("policy"); !strings.Contains(out.Stdout, "holds the same policy as the floor") || !strings.Contains(out.Stdout, "by accepted:terminal") {
		t.Errorf("policy show after the accept:\n%s", out)
	}
	p.record() // a build signal: the host reads the accepted floor
	refused(t, c, "in the epoch that was running")
	p.rebuild(t, c, "B")
	if got := call(t, c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); !strings.Contains(got, "quantity=1") {
		t.Errorf("adjust in the next epoch, exempt as accepted: %q", got)
	}
	if !strings.Contains(c.Stderr(), "policy floor: accepted by a person (terminal") {
		t.Errorf("host log does not say it read the accepted floor:\n%s", c.Stderr())
	}
	out, _ = p.mcpepoch("audit", "show", "--json")
	if !strings.Contains(out.Stdout, `"type":"policy_accepted"`) || !strings.Contains(out.Stdout, `"proof":"terminal"`) {
		t.Errorf("no policy_accepted record with the proof:\n%s", out)
	}
}

// A floor file rewritten by hand while the host runs is not read: only
// one that mcpepoch policy accept wrote is.
func TestFloorEditedByHandNotRead(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_*"]`)
	cfgDir := os.Getenv("XDG_CONFIG_HOME")
	f, err := trust.LoadFloor(cfgDir+"/mcpepoch", trust.FloorRoot(p.dir))
	if err != nil || f == nil {
		t.Fatalf("floor: %v, %v", f, err)
	}
	f.Exempt = []string{"inventory_*"}
	if err := trust.SaveFloor(cfgDir+"/mcpepoch", *f, "strengthened", f.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	p.rebuild(t, c, "B")
	refused(t, c, "after the floor file was rewritten")
}

// After mcpepoch policy accept, a host that already read the weakening
// says, in status and in its refusals, that it was accepted and is in
// force from the next epoch, not that a person must accept it.
func TestPolicyAcceptedSaidUntilNextEpoch(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	p.record() // the host reads the weakening
	if got := refused(t, c, "before the accept"); !strings.Contains(got, "only a person can accept the change") {
		t.Fatalf("refusal before the accept does not ask for it: %s", got)
	}
	if out, code := testenv.Run(t, p.dir, []string{"MCPEPOCH_TEST_PERSON=1"}, p.bin, "policy", "accept"); code != 0 {
		t.Fatalf("accept at a terminal: exit %d\n%s", code, out)
	}
	const said = "accepted, in force from the next epoch (mcpepoch restart)"
	out, _ := p.mcpepoch("status")
	if !strings.Contains(out.Stdout, said) || strings.Contains(out.Stdout, "a person must accept it") {
		t.Errorf("status after the accept:\n%s", out)
	}
	got := refused(t, c, "in the epoch that was running")
	if !strings.Contains(got, "accepted by a person (mcpepoch policy accept), in force from the next epoch (mcpepoch restart)") ||
		strings.Contains(got, "only a person can accept the change") {
		t.Errorf("refusal after the accept: %s", got)
	}
}

// TestPolicyAcceptedInForceAfterCrash: a weakening accepted with
// mcpepoch policy accept is in force from the next epoch, whatever starts
// it: here crash recovery, with no build signal and no mcpepoch restart
// between the acceptance and the crash.
func TestPolicyAcceptedInForceAfterCrash(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	if out, code := testenv.Run(t, p.dir, []string{"MCPEPOCH_TEST_PERSON=1"}, p.bin, "policy", "accept"); code != 0 {
		t.Fatalf("accept at a terminal: exit %d\n%s", code, out)
	}
	refused(t, c, "in the epoch that was running")
	st := p.status()
	if len(st) != 1 || st[0].Execution == nil {
		t.Fatalf("status: %+v, want one host with a running server", st)
	}
	if err := syscall.Kill(st[0].Execution.ProcessID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitListChanged(1, 30*time.Second); err != nil {
		t.Fatalf("no list_changed after crash recovery: %v\n%s", err, c.Stderr())
	}
	if got := call(t, c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); !strings.Contains(got, "quantity=1") {
		t.Errorf("adjust in the epoch crash recovery started, exempt as accepted: %q", got)
	}
	if !strings.Contains(c.Stderr(), "policy floor: accepted by a person (terminal") {
		t.Errorf("host log does not say it read the accepted floor:\n%s", c.Stderr())
	}
}
