package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// ownConfig gives p a config directory of its own (XDG_CONFIG_HOME) with
// the fake ssh-keygen first on PATH, and returns the environment, the
// trust directory and a soft FIDO key's file and public key file, not
// enrolled.
func ownConfig(t *testing.T) (env []string, tdir, keyFile, pubFile string) {
	t.Helper()
	home := t.TempDir()
	key := softkey.NewSSHEd25519()
	keyFile = softKeyFile(t, home, "key", key)
	pubFile = filepath.Join(home, "key.pub")
	if err := os.WriteFile(pubFile, key.AuthorizedKey("test key"), 0o600); err != nil {
		t.Fatal(err)
	}
	env = []string{"XDG_CONFIG_HOME=" + home, "PATH=" + fakeSSHKeygen(t, home) + ":" + os.Getenv("PATH"),
		"MCPEPOCH_TEST_SSH_KEYGEN=1", "MCPEPOCH_TEST_SK_FLAGS=1"}
	return env, filepath.Join(home, "mcpepoch"), keyFile, pubFile
}

// A floor file deleted while the project's audit log shows an earlier
// floor, with nothing enrolled: mcpepoch policy and doctor say what the
// host says (the floor is missing, the strictest is in force, presence
// with no authenticator refuses every approval), a terminal answer does
// not accept the weakening of that presence floor, and the way out the
// messages name works: a first enrollment at a terminal, then policy
// accept with that key; the next host start holds mcpepoch.toml's policy.
func TestFloorMissingWayOut(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`)
	env, tdir, keyFile, pubFile := ownConfig(t)
	c := testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	refused(t, c, "at first use")
	c.Close()
	if err := os.Remove(trust.FloorPath(tdir, trust.FloorRoot(p.dir))); err != nil {
		t.Fatal(err)
	}
	// Weaker than the floor the last host held, too: the next start checks
	// the accepted file against that floor.
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_*"]`)
	c = testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	if _, rerr := c.Call("inventory_lookup", map[string]any{"sku": "bolt"}); rerr == nil {
		t.Errorf("lookup with the floor missing: exempt, want it held to the strictest floor")
	}
	const gone = "no policy floor found, but this project's audit log shows an earlier host ran with one"
	for _, where := range []string{c.Stderr(), status(t, p, env)} {
		if !strings.Contains(where, gone) || !strings.Contains(where, "mcpepoch policy accept --ssh KEY") {
			t.Errorf("the host does not say the floor is missing and the way out:\n%s", where)
		}
	}
	if !strings.Contains(c.Stderr(), floor.NoAuthenticatorNote()) {
		t.Errorf("host log does not say presence cannot be given:\n%s", c.Stderr())
	}
	out, _ := testenv.Run(t, p.dir, env, p.bin, "policy")
	if !strings.Contains(out.Stdout, gone) || !strings.Contains(out.Stdout, "the strictest, in force while") ||
		!strings.Contains(out.Stdout, `grants.exempt: floor [] → mcpepoch.toml ["inventory_*"] (WEAKER`) {
		t.Errorf("mcpepoch policy does not show the state the host is in:\n%s", out)
	}
	out, code := testenv.Run(t, p.dir, env, p.bin, "doctor")
	if code == 0 || !strings.Contains(out.Stdout, gone) || !strings.Contains(out.Stdout, floor.NoAuthenticatorNote()) {
		t.Errorf("doctor: exit %d, does not flag the missing floor and presence with nothing enrolled:\n%s", code, out)
	}
	person := append(env, "MCPEPOCH_TEST_PERSON=1")
	if out, code := testenv.Run(t, p.dir, person, p.bin, "policy", "accept"); code == 0 || !strings.Contains(out.Stderr, "not accepted: this floor counts only presence") {
		t.Errorf("a terminal answer accepted a weakening of the presence floor: exit %d\n%s", code, out)
	}
	if out, code := testenv.Run(t, p.dir, person, p.bin, "enroll", "--ssh", pubFile); code != 0 {
		t.Fatalf("first enrollment at a terminal: exit %d\n%s", code, out)
	}
	out, code = testenv.Run(t, p.dir, env, p.bin, "policy", "accept", "--ssh", keyFile)
	if code != 0 || !strings.Contains(out.Stderr, "accepted (proof presence)") || !strings.Contains(out.Stderr, "takes it when it starts again") {
		t.Fatalf("policy accept with the enrolled key: exit %d\n%s", code, out)
	}
	c.Close()
	c = testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	if got := call(t, c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1}); !strings.Contains(got, "quantity=1") {
		t.Errorf("adjust after the accept, exempt as accepted: %q", got)
	}
	if strings.Contains(c.Stderr(), "no policy floor found") || strings.Contains(c.Stderr(), "not taken") {
		t.Errorf("the host still finds the floor missing after the accept:\n%s", c.Stderr())
	}
}

// status returns mcpepoch status's output under env.
func status(t *testing.T, p *project, env []string) string {
	t.Helper()
	out, _ := testenv.Run(t, p.dir, env, p.bin, "status")
	return out.Stdout
}

// A trust store deleted (or a config directory without it) while the
// project's audit log shows an earlier host pinned a root is not "nothing
// enrolled": the default proof stays presence, so a terminal answer
// approves nothing and policy accept asks for presence too, and the host,
// status, doctor and a trust_store_missing record say so.
func TestTrustStoreMissingCountsOnlyPresence(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, `exempt = ["inventory_lookup"]`)
	env, tdir, _, pubFile := ownConfig(t)
	person := append(env, "MCPEPOCH_TEST_PERSON=1")
	if out, code := testenv.Run(t, p.dir, person, p.bin, "enroll", "--ssh", pubFile); code != 0 {
		t.Fatalf("first enrollment at a terminal: exit %d\n%s", code, out)
	}
	c := testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	refused(t, c, "with the root enrolled")
	c.Close()
	if err := os.Remove(filepath.Join(tdir, trust.FileName)); err != nil {
		t.Fatal(err)
	}
	c = testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	refused(t, c, "with the store gone")
	const gone = "trust store missing:"
	for _, where := range []string{c.Stderr(), status(t, p, env)} {
		if !strings.Contains(where, gone) || !strings.Contains(where, "enrolls again at their own terminal as a first enrollment") ||
			!strings.Contains(where, "pinned the root SHA256:") {
			t.Errorf("the host does not say the trust store went missing:\n%s", where)
		}
	}
	if out, code := testenv.Run(t, p.dir, person, p.bin, "approve", "--yes", "--all"); code == 0 || !strings.Contains(out.Stderr, "presence") {
		t.Errorf("a terminal answer with the store gone: exit %d, want a refusal\n%s", code, out)
	}
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_*"]`)
	if out, code := testenv.Run(t, p.dir, person, p.bin, "policy", "accept"); code == 0 || !strings.Contains(out.Stderr, "not accepted: this floor counts only presence") {
		t.Errorf("policy accept at a terminal with the store gone: exit %d, want a refusal\n%s", code, out)
	}
	if out, code := testenv.Run(t, p.dir, env, p.bin, "doctor"); code == 0 || !strings.Contains(out.Stdout, gone) {
		t.Errorf("doctor: exit %d, does not flag the missing store:\n%s", code, out)
	}
	out, _ := testenv.Run(t, p.dir, env, p.bin, "audit", "show", "--json", "--type", "trust_store_missing")
	if strings.Count(out.Stdout, `"type":"trust_store_missing"`) != 1 || !strings.Contains(out.Stdout, `"last_root":"SHA256:`) {
		t.Errorf("want one trust_store_missing record naming the last root:\n%s", out)
	}
}

// A weakening written into mcpepoch.toml and not applied is said by
// record, in one line naming mcpepoch policy accept, and the refusal does
// not then advise the exempt list; proof = presence with nothing enrolled
// is said by the host, record and doctor.
func TestRecordSaysPolicyNotApplied(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, "exempt = [\"inventory_lookup\"]\nproof = [\"presence\"]")
	env, _, _, _ := ownConfig(t)
	c := testenv.Driver(t, p.dir, env, p.bin, "host", "--", "node", "dist/server.js")
	refused(t, c, "at first use")
	if !strings.Contains(c.Stderr(), floor.NoAuthenticatorNote()) {
		t.Errorf("host log does not say presence cannot be given:\n%s", c.Stderr())
	}
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	out := p.record()
	if !strings.Contains(out, "policy: mcpepoch.toml weakens the project's policy floor, not applied: grants.exempt") ||
		!strings.Contains(out, "mcpepoch policy accept") || !strings.Contains(out, "policy: "+floor.NoAuthenticatorNote()) {
		t.Errorf("record does not say what of the policy is not applied:\n%s", out)
	}
	_, rerr := c.Call("inventory_adjust", map[string]any{"sku": "bolt", "delta": 1})
	if rerr == nil || !strings.Contains(rerr.Error(), "not applied") || strings.Contains(rerr.Error(), "lists it under [grants] exempt") {
		t.Errorf("refusal with the exempt weakening not applied: %v", rerr)
	}
	if out, code := testenv.Run(t, p.dir, env, p.bin, "doctor"); code == 0 || !strings.Contains(out.Stdout, floor.NoAuthenticatorNote()) {
		t.Errorf("doctor: exit %d, does not flag presence with nothing enrolled:\n%s", code, out)
	}
}
