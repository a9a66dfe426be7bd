package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A host started with an empty config directory (XDG_CONFIG_HOME pointed
// elsewhere, as a client's launch settings can do) finds no policy floor;
// the project's audit log shows an earlier host ran with one, so it is not
// a first use: the strictest floor is in force, a weakening written into
// mcpepoch.toml meanwhile is not applied, approve --yes is refused, and the
// host's stderr, status and the audit log say so. The strictest floor is
// strictest in every field: the file's unset (optional) attestation is not
// applied either. Every start records the floor and trust store it used.
func TestEmptyConfigDirIsNotFirstUse(t *testing.T) {
	t.Parallel()
	p, c := floorProject(t)
	c.Close()
	p.editToml(`exempt = ["inventory_lookup"]`, "exempt = [\"inventory_lookup\"]\nproof = [\"same-user\"]")
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(t.TempDir(), "elsewhere")}
	c = testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	if got := refused(t, c, "under an empty config directory"); !strings.Contains(got, "no answer at a terminal or in the MCP client can change that") {
		t.Errorf("the refusal does not say why the strictest policy holds: %s", got)
	}
	if !strings.Contains(c.Stderr(), "no policy floor found, but this project's audit log shows an earlier host ran with one") {
		t.Errorf("host stderr does not say the floor went missing:\n%s", c.Stderr())
	}
	if !strings.Contains(c.Stderr(), `grants.attestation = (default: "optional") (in force: "required")`) {
		t.Errorf("host stderr does not say the strictest floor holds attestation = \"required\":\n%s", c.Stderr())
	}
	for _, want := range []string{"no answer at a terminal or in the MCP client can change that", "; this host reads " + filepath.Join(env[0][len("XDG_CONFIG_HOME="):], "mcpepoch"),
		"not in force while no policy floor is found"} {
		if !strings.Contains(c.Stderr(), want) {
			t.Errorf("host stderr does not say %q:\n%s", want, c.Stderr())
		}
	}
	for _, wrong := range []string{"raised by mcpepoch.toml", "mcpepoch.toml weakens", "(default: an authenticator is enrolled)"} {
		if strings.Contains(c.Stderr(), wrong) {
			t.Errorf("host stderr says %q, which is not so:\n%s", wrong, c.Stderr())
		}
	}
	out, code := testenv.Run(t, p.dir, env, p.bin, "approve", "--yes", "--all")
	if code == 0 {
		t.Fatalf("approve --yes under the empty config directory: exit 0, want a refusal\n%s", out)
	}
	out, _ = testenv.Run(t, p.dir, env, p.bin, "status")
	if !strings.Contains(out.Stdout, "no policy floor found") {
		t.Errorf("status does not say the floor went missing:\n%s", out)
	}
	out, _ = p.mcpepoch("audit", "show", "--type", "policy_floor_missing")
	if strings.Count(out.Stdout, "policy_floor_missing") != 1 {
		t.Errorf("audit show --type policy_floor_missing: want one record\n%s", out)
	}
	out, _ = p.mcpepoch("audit", "show", "--json", "--type", "trust_pinned")
	if n := strings.Count(out.Stdout, `"floor_digest":"sha256:`); n != 1 {
		t.Errorf("trust_pinned records with the floor's digest: %d, want 1 (the first host's; the second found none)\n%s", n, out)
	}
	if !strings.Contains(out.Stdout, filepath.Join("elsewhere", "mcpepoch")) {
		t.Errorf("trust_pinned does not name the config directory the second host used:\n%s", out)
	}
}
