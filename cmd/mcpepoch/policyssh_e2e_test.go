package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestHelperSSHKeygen is no test: a script named ssh-keygen runs the test
// binary so (TestPolicyAcceptWithSSHKey), to sign as ssh-keygen -Y sign -n
// NS -f KEY MSG does, with the soft FIDO key whose seed (hex) KEY holds and
// the flags MCPEPOCH_TEST_SK_FLAGS says (1: user presence).
func TestHelperSSHKeygen(t *testing.T) {
	if os.Getenv("MCPEPOCH_TEST_SSH_KEYGEN") != "1" {
		t.Skip("run as ssh-keygen by TestPolicyAcceptWithSSHKey")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	var ns, keyFile string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-n":
			ns = args[i+1]
		case "-f":
			keyFile = args[i+1]
		}
	}
	msgFile := args[len(args)-1]
	seed, err := os.ReadFile(keyFile)
	if err != nil {
		os.Exit(2)
	}
	raw, _ := hex.DecodeString(strings.TrimSpace(string(seed)))
	msg, err := os.ReadFile(msgFile)
	if err != nil {
		os.Exit(2)
	}
	flags, _ := strconv.Atoi(os.Getenv("MCPEPOCH_TEST_SK_FLAGS"))
	sig := softkey.SSHEd25519FromSeed(raw).SSHSIG(ns, msg, byte(flags), uint32(time.Now().Unix()))
	if err := os.WriteFile(msgFile+".sig", sig, 0o600); err != nil {
		os.Exit(2)
	}
	os.Exit(0)
}

// Under a floor that counts only presence (an authenticator is enrolled),
// policy accept takes the signature of an enrolled FIDO ssh key over the
// change's digest, with user presence, and nothing less: not --yes, not a
// terminal, not a signature without the presence flag.
func TestPolicyAcceptWithSSHKey(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	home := t.TempDir()
	tdir := filepath.Join(home, "mcpepoch")
	store, err := trust.Open(tdir)
	if err != nil {
		t.Fatal(err)
	}
	key := softkey.NewSSHEd25519()
	a, err := trust.NewSSH(key.AuthorizedKey("test key"), "test key", time.Now())
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
	root := trust.FloorRoot(p.dir)
	cfg, err := config.Load(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	floor := trust.FloorOf(root, cfg)
	floor.Exempt = []string{"inventory_lookup"}
	if err := trust.SaveFloor(tdir, floor, "first_use", time.Now()); err != nil {
		t.Fatal(err)
	}
	keyFile := softKeyFile(t, home, "key", key)
	env := []string{"XDG_CONFIG_HOME=" + home, "PATH=" + fakeSSHKeygen(t, home) + ":" + os.Getenv("PATH"), "MCPEPOCH_TEST_SSH_KEYGEN=1", "MCPEPOCH_TEST_PERSON=1"}
	run := func(flags string, args ...string) (testenv.Output, int) {
		t.Helper()
		return testenv.Run(t, p.dir, append(env, "MCPEPOCH_TEST_SK_FLAGS="+flags), p.bin, append([]string{"policy", "accept"}, args...)...)
	}
	for _, tc := range []struct {
		name, flags string
		args        []string
		want        string
	}{
		{"--yes", "1", []string{"--yes"}, "not accepted: --yes proves no person, and this floor counts only presence"},
		{"a terminal", "1", nil, "not accepted: this floor counts only presence"},
		{"no presence flag", "0", []string{"--ssh", keyFile}, "not accepted:"},
	} {
		if out, code := run(tc.flags, tc.args...); code == 0 || !strings.Contains(out.Stderr, tc.want) {
			t.Errorf("accept with %s: exit %d, want a refusal %q\n%s", tc.name, code, tc.want, out)
		}
	}
	if f, _ := trust.LoadFloor(tdir, root); f == nil || !f.Same(floor) {
		t.Fatalf("a refused accept changed the floor: %+v", f)
	}
	// Under grants.attestation = "required" the unattested key proves no
	// presence, not even to accept dropping the rule.
	attested := floor
	attested.Attestation = config.AttestationRequired
	if err := trust.SaveFloor(tdir, attested, "first_use", time.Now()); err != nil {
		t.Fatal(err)
	}
	if out, code := run("1", "--ssh", keyFile); code == 0 || !strings.Contains(out.Stderr, "counts only an attested authenticator") {
		t.Errorf("accept with an unattested key under attestation = required: exit %d, want a refusal\n%s", code, out)
	}
	if err := trust.SaveFloor(tdir, floor, "first_use", time.Now()); err != nil {
		t.Fatal(err)
	}
	out, code := run("1", "--ssh", keyFile)
	if code != 0 || !strings.Contains(out.Stderr, "accepted (proof presence)") {
		t.Fatalf("accept with the key's touch: exit %d\n%s", code, out)
	}
	if f, _ := trust.LoadFloor(tdir, root); f == nil || f.UpdatedBy != "accepted:presence" || len(f.Exempt) != 1 || f.Exempt[0] != "inventory_*" {
		t.Errorf("floor after the accept: %+v", f)
	}
	out, _ = testenv.Run(t, p.dir, env, p.bin, "audit", "show", "--json")
	if !strings.Contains(out.Stdout, `"type":"policy_accepted"`) || !strings.Contains(out.Stdout, `"authenticator":"`+a.ID+`"`) {
		t.Errorf("no policy_accepted record naming the key:\n%s", out)
	}
}

// softKeyFile writes the seed of key into dir/name, where the fake
// ssh-keygen (fakeSSHKeygen) reads it as its -f KEY, and returns the path.
func softKeyFile(t *testing.T, dir, name string, key *softkey.SSHKey) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(key.Seed())), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeSSHKeygen writes dir/bin/ssh-keygen, which runs this test binary as
// TestHelperSSHKeygen (MCPEPOCH_TEST_SSH_KEYGEN=1 in its environment), and
// returns dir/bin, for the front of PATH.
func fakeSSHKeygen(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec '" + self + "' -test.run='^TestHelperSSHKeygen$' -- \"$@\"\n"
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "ssh-keygen"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
