package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// presenceFloor is the example under [grants] proof = ["presence"], only
// inventory_lookup exempt, with a soft FIDO ssh key enrolled in a config
// directory of its own, served by a host that made that policy the floor.
type presenceFloor struct {
	*project
	env       []string // XDG_CONFIG_HOME, the fake ssh-keygen on PATH
	tdir      string   // the trust store's directory
	key       *softkey.SSHKey
	keyID     string
	keyFile   string
	floorPath string
	c         *testenv.Client
}

func newPresenceFloor(t *testing.T, grants ...string) *presenceFloor {
	t.Helper()
	p := newProject(t)
	p.editToml(`exempt = ["inventory_*"]`, "exempt = [\"inventory_lookup\"]\nproof = [\"presence\"]\n"+strings.Join(grants, "\n"))
	home := t.TempDir()
	pf := &presenceFloor{project: p, tdir: filepath.Join(home, "mcpepoch"), key: softkey.NewSSHEd25519()}
	pf.keyFile = softKeyFile(t, home, "key", pf.key)
	store, err := trust.Open(pf.tdir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trust.NewSSH(pf.key.AuthorizedKey("person"), "person", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Propose(trust.OpAdd, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(c, nil); err != nil {
		t.Fatal(err)
	}
	pf.keyID = a.ID
	pf.env = []string{"XDG_CONFIG_HOME=" + home, "PATH=" + fakeSSHKeygen(t, home) + ":" + os.Getenv("PATH"),
		"MCPEPOCH_TEST_SSH_KEYGEN=1", "MCPEPOCH_TEST_SK_FLAGS=1"}
	pf.floorPath = trust.FloorPath(pf.tdir, trust.FloorRoot(p.dir))
	pf.startHost()
	refused(t, pf.c, "before any edit")
	pf.run("record")
	return pf
}

// startHost connects a new MCP client through a new host.
func (pf *presenceFloor) startHost() {
	pf.t.Helper()
	pf.c = testenv.Driver(pf.t, pf.dir, pf.env, pf.bin, "host", "--", "node", "dist/server.js")
}

// run runs mcpepoch with the fixture's environment.
func (pf *presenceFloor) run(args ...string) (testenv.Output, int) {
	pf.t.Helper()
	return testenv.Run(pf.t, pf.dir, pf.env, pf.bin, args...)
}

// accept runs policy accept --ssh with key file, which must succeed.
func (pf *presenceFloor) accept(keyFile string) {
	pf.t.Helper()
	if out, code := pf.run("policy", "accept", "--ssh", keyFile); code != 0 || !strings.Contains(out.Stderr, "accepted (proof presence)") {
		pf.t.Fatalf("policy accept --ssh: exit %d\n%s", code, out)
	}
}

// floorFile returns the floor file's bytes; setFloorFile writes them back.
func (pf *presenceFloor) floorFile() []byte {
	pf.t.Helper()
	b, err := os.ReadFile(pf.floorPath)
	if err != nil {
		pf.t.Fatal(err)
	}
	return b
}

func (pf *presenceFloor) setFloorFile(b []byte) {
	pf.t.Helper()
	if err := os.WriteFile(pf.floorPath, b, 0o600); err != nil {
		pf.t.Fatal(err)
	}
}

// refusedFloor checks that the host refused the floor file once more than
// before (n policy_floor_refused records so far), says why, and wrote the
// floor it holds back into the file.
func (pf *presenceFloor) refusedFloor(n int, why string) {
	pf.t.Helper()
	out, _ := pf.run("audit", "show", "--json", "--type", "policy_floor_refused")
	if got := strings.Count(out.Stdout, `"type":"policy_floor_refused"`); got != n+1 || !strings.Contains(out.Stdout, why) {
		pf.t.Errorf("policy_floor_refused records: %d, want %d, the last saying %q\n%s", got, n+1, why, out)
	}
	if !strings.Contains(pf.c.Stderr(), " was refused (") {
		pf.t.Errorf("host log does not say the floor file was refused:\n%s", pf.c.Stderr())
	}
	if f, err := trust.LoadFloor(pf.tdir, trust.FloorRoot(pf.dir)); err != nil || f == nil || f.UpdatedBy != "restored" {
		pf.t.Errorf("the floor file after the refusal: %+v, %v; want the floor held, restored", f, err)
	}
}

// Under a floor that counts only presence, a floor file an agent writes
// itself, marked as accepted by a person, is refused and audited, and
// approve --yes stays refused; so is one that policy accept wrote with a
// key enrolled after the host pinned the trust store, and a person's
// earlier acceptance written back after the floor was raised again. A
// person's own accept, signed by a key of the pinned store, is taken.
func TestFloorAcceptanceIsChecked(t *testing.T) {
	t.Parallel()
	pf := newPresenceFloor(t)
	held := pf.floorFile()
	weaken := func() {
		pf.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	}

	// The agent's forgery: mcpepoch.toml and the floor file both say
	// same-user, the file marked accepted:presence.
	pf.editToml(`proof = ["presence"]`, `proof = ["same-user"]`)
	forged := pf.forge(held, "first_use", "accepted:presence")
	pf.setFloorFile(forged)
	pf.rebuild(t, pf.c, "B")
	pf.refusedFloor(0, "carries no acceptance")
	if out, code := pf.run("approve", "--yes", "--all"); code == 0 {
		t.Fatalf("approve --yes after the forged floor: exit 0, want a refusal\n%s", out)
	}
	refused(t, pf.c, "after the forged floor")
	pf.editToml(`proof = ["same-user"]`, `proof = ["presence"]`)

	// A key enrolled after the host started: policy accept takes it, the
	// host does not (its pinned store does not hold it).
	late := softkey.NewSSHEd25519()
	pf.enroll(late)
	weaken()
	pf.accept(softKeyFile(t, t.TempDir(), "late", late))
	pf.rebuild(t, pf.c, "C")
	pf.refusedFloor(1, "does not verify against the trust store the host pinned")
	refused(t, pf.c, "after an accept by a key the host did not pin")

	// The person's accept is taken, from the next epoch.
	pf.accept(pf.keyFile)
	accepted := pf.floorFile()
	pf.rebuild(t, pf.c, "D")
	if !strings.Contains(pf.c.Stderr(), "policy floor: accepted by a person (presence") {
		t.Fatalf("host log does not say it took the accepted floor:\n%s", pf.c.Stderr())
	}
	call(t, pf.c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1})

	// Raised again by the file, then the earlier acceptance written back.
	pf.editToml(`exempt = ["inventory_lookup", "inventory_adjust"]`, `exempt = ["inventory_lookup"]`)
	pf.run("record")
	refused(t, pf.c, "after the floor was raised again")
	weaken()
	pf.setFloorFile(accepted)
	pf.rebuild(t, pf.c, "E")
	pf.refusedFloor(2, "not the one this host holds")
	refused(t, pf.c, "after an earlier acceptance was written back")
}

// enroll adds key to the trust store, signed by the fixture's key.
func (pf *presenceFloor) enroll(key *softkey.SSHKey) {
	pf.t.Helper()
	store, err := trust.Open(pf.tdir)
	if err != nil {
		pf.t.Fatal(err)
	}
	a, err := trust.NewSSH(key.AuthorizedKey("late"), "late", time.Now())
	if err != nil {
		pf.t.Fatal(err)
	}
	c, err := store.Propose(trust.OpAdd, a)
	if err != nil {
		pf.t.Fatal(err)
	}
	ch := c.Requirement.Challenge
	p, err := sshsig.VerifyPresence(store, pf.key.SSHSIG(trust.SSHNamespace, ch[:], 1, 1), ch, trust.SSHNamespace, false)
	if err != nil {
		pf.t.Fatal(err)
	}
	if err := store.Apply(c, &p); err != nil {
		pf.t.Fatal(err)
	}
}

// forge returns the floor file b with proof same-user in place of presence
// and updatedBy by in place of was, as an agent would write it.
func (pf *presenceFloor) forge(b []byte, was, by string) []byte {
	pf.t.Helper()
	s := strings.Replace(string(b), `"updatedBy": "`+was+`"`, `"updatedBy": "`+by+`"`, 1)
	s = strings.Replace(s, `"proof": [`+"\n"+`    "presence"`+"\n"+`  ]`, `"proof": ["same-user"]`, 1)
	if !strings.Contains(s, `"same-user"`) || !strings.Contains(s, by) {
		pf.t.Fatalf("could not forge the floor file:\n%s", b)
	}
	return []byte(s)
}

// A floor file written while no host runs is checked when the next host
// starts, against the floor the project's audit log says the last host
// held: one weaker, which no person accepted, is refused and audited, that
// floor is held and written back, and approve --yes stays refused; a
// person's policy accept made meanwhile is taken.
func TestFloorWrittenWhileNoHostRuns(t *testing.T) {
	t.Parallel()
	pf := newPresenceFloor(t)
	pf.c.Close()
	pf.editToml(`proof = ["presence"]`, `proof = ["same-user"]`)
	pf.setFloorFile(pf.forge(pf.floorFile(), "first_use", "first_use"))
	pf.startHost()
	refused(t, pf.c, "under the forged floor")
	pf.refusedFloor(0, "weaker than the floor the last host held (grants.proof) and no person accepted it")
	if out, code := pf.run("approve", "--yes", "--all"); code == 0 {
		t.Fatalf("approve --yes after the forged floor: exit 0, want a refusal\n%s", out)
	}
	pf.c.Close()

	pf.editToml(`proof = ["same-user"]`, `proof = ["presence"]`)
	pf.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	pf.accept(pf.keyFile)
	pf.startHost()
	if !strings.Contains(pf.c.Stderr(), "policy floor: accepted by a person (presence") {
		t.Fatalf("host log does not say it took the accepted floor:\n%s", pf.c.Stderr())
	}
	call(t, pf.c, "inventory_adjust", map[string]any{"sku": "bolt", "delta": 1})
}

// Under attestation = "required", an acceptance signed by the person's
// key, valid over the change, does not count when the key is unattested
// (every ssh key is), as for any approval: a floor file carrying it,
// written by hand past policy accept (which refuses such a key too), is
// refused by the host.
func TestFloorAcceptanceNeedsAttestedKey(t *testing.T) {
	t.Parallel()
	pf := newPresenceFloor(t, `attestation = "required"`)
	root := trust.FloorRoot(pf.dir)
	held, err := trust.LoadFloor(pf.tdir, root)
	if err != nil || held == nil {
		t.Fatalf("floor: %v, %v", held, err)
	}
	pf.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	cfg, err := config.Load(pf.dir)
	if err != nil {
		t.Fatal(err)
	}
	to := trust.FloorOf(root, cfg)
	d := trust.AcceptDigest(*held, to, "n1")
	to.Accepted = &trust.Acceptance{Proof: "presence", Channel: "ssh", From: held.Digest().String(), Nonce: "n1",
		Authenticator: pf.keyID, Signature: string(pf.key.SSHSIG(trust.PolicyNamespace, d[:], 1, uint32(time.Now().Unix())))}
	if err := trust.SaveFloor(pf.tdir, to, "accepted:presence", time.Now()); err != nil {
		t.Fatal(err)
	}
	pf.rebuild(t, pf.c, "B")
	pf.refusedFloor(0, "attestation = ")
	refused(t, pf.c, "after an acceptance by an unattested key")
}
