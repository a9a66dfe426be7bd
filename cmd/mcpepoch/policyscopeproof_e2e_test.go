package main

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A credential scope's own proof list counts for accepting any change of
// the floor: with grants.proof = ["same-user"] but the scope asking for
// terminal, dropping the scope's proof is not accepted with --yes (which
// proves same-user only), and is at a terminal.
func TestPolicyAcceptNeedsTheScopesProof(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, "proof = [\"same-user\"]\nexempt = [\"inventory_lookup\"]")
	p.editToml(`tools = ["inventory_order"]`, "tools = [\"inventory_order\"]\nproof = [\"terminal\"]")
	c := p.host()
	p.record()
	p.editToml("tools = [\"inventory_order\"]\nproof = [\"terminal\"]", `tools = ["inventory_order"]`)
	if out, code := p.mcpepoch("policy", "accept", "--yes"); code == 0 || !strings.Contains(out.Stderr, "not accepted: --yes proves no person") {
		t.Fatalf("accept --yes of a scope's proof dropped, under grants.proof same-user: exit %d\n%s", code, out)
	}
	out, code := testenv.Run(t, p.dir, []string{"MCPEPOCH_TEST_PERSON=1"}, p.bin, "policy", "accept")
	if code != 0 || !strings.Contains(out.Stderr, "accepted (proof terminal)") {
		t.Fatalf("accept at a terminal: exit %d\n%s", code, out)
	}
	p.record() // a build signal: the host reads the accepted floor
	if !strings.Contains(c.Stderr(), "policy floor: accepted by a person (terminal") {
		t.Errorf("the host did not take the terminal acceptance:\n%s", c.Stderr())
	}
}
