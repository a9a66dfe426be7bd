package main

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestNoConfigDirIsMissingFloor: a host whose entry leaves it no usable
// config directory (XDG_CONFIG_HOME relative, HOME empty) holds the
// strictest policy, as for a floor that went missing: exempt = ["*"]
// written into mcpepoch.toml lets nothing run without an approval, and
// stderr, status and the audit log say why.
func TestNoConfigDirIsMissingFloor(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["*"]`)
	env := []string{"XDG_CONFIG_HOME=relative/config", "HOME="}
	c := testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	refused(t, c, "with no usable config directory")
	if !strings.Contains(c.Stderr(), "no usable config directory") {
		t.Errorf("host stderr does not say the floor has no directory:\n%s", c.Stderr())
	}
	if out, _ := testenv.Run(t, p.dir, env, p.bin, "status"); !strings.Contains(out.Stdout, "no usable config directory") {
		t.Errorf("status does not say the floor has no directory:\n%s", out)
	}
	if out, _ := p.mcpepoch("audit", "show", "--type", "policy_floor_missing"); strings.Count(out.Stdout, "policy_floor_missing") != 1 {
		t.Errorf("audit show --type policy_floor_missing: want one record\n%s", out)
	}
}
