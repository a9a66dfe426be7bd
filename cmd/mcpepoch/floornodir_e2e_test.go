package main

import (
	"encoding/json"
	"os"
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
	// The client's entry that gives the host that environment is a
	// problem doctor names, run from the person's own environment.
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"inventory": map[string]any{
		"command": p.bin, "args": []string{"host", "--dir", p.dir},
		"env": map[string]string{"XDG_CONFIG_HOME": "relative/config", "HOME": ""}}}})
	if err := os.WriteFile(p.path(".mcp.json"), entry, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := p.mcpepoch("doctor"); code == 0 || !strings.Contains(out.Combined, ".mcp.json: server inventory: its env leaves mcpepoch host no usable config directory") {
		t.Errorf("doctor with the entry that leaves the host no config directory: exit %d\n%s", code, out)
	}
}
