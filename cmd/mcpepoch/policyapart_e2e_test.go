package main

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestPolicyAcceptWithoutHostNeedsPresence: with no host running, a
// terminal of its own (script in a session of its own, as an agent can
// open) answering y to mcpepoch policy accept is not accepted: nothing
// tells it from the agent's, so a weakening needs presence, and the
// refusal names enroll.
func TestPolicyAcceptWithoutHostNeedsPresence(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "script", testenv.InstallUtilLinux)
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	c.Close() // the agent can end the host
	out, code := testenv.Run(t, p.dir, []string{"MCPEPOCH_BIN=" + p.bin, "SHELL=/bin/sh"}, "setsid", "-w", "sh", "-c",
		`printf 'y\n' | script -qec "$MCPEPOCH_BIN policy accept" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "not accepted: ") || !strings.Contains(out.Combined, "needs presence") || !strings.Contains(out.Combined, "enroll") {
		t.Fatalf("policy accept at a terminal with no host: exit %d\n%s\nwant it refused, naming enroll", code, out)
	}
	if out, _ := p.mcpepoch("policy"); strings.Contains(out.Stdout, "holds the same policy as the floor") {
		t.Fatalf("the floor was weakened:\n%s", out)
	}
}
