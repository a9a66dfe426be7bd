package trust

import (
	"testing"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
)

// An unset grants.proof is printed as the list it stands for, with why:
// the default depends on whether an authenticator is enrolled, and a
// person reading "(in force: …)" must see which one holds.
func TestFloorNamesDefaultProof(t *testing.T) {
	floor := FloorOf("/p", &config.Config{})
	file := &config.Config{Grants: config.Grants{Proof: []string{"same-user"}}}
	for _, tc := range []struct {
		enrolled bool
		want     string
	}{
		{true, `grants.proof = ["same-user"] (in force: ["presence"] (default: an authenticator is enrolled))`},
		{false, `grants.proof = ["same-user"] (in force: ["terminal", "client"] (default: no authenticator is enrolled))`},
	} {
		_, _, weak := floor.Reconcile(file, tc.enrolled)
		if len(weak) != 1 || weak[0].String() != tc.want {
			t.Errorf("enrolled=%v: weakenings %q, want [%s]", tc.enrolled, weak, tc.want)
		}
		diff := floor.Diff(file, tc.enrolled)
		if len(diff) != 1 || diff[0].Floor != diff[0].InForce || diff[0].Floor == "(default)" {
			t.Errorf("enrolled=%v: difference %+v, want the floor named as the default in force", tc.enrolled, diff)
		}
	}
}

// A presence acceptance made on the page carries a WebAuthn assertion in
// place of an SSHSIG: CheckAcceptance takes either (the host verifies the
// one there is), and refuses one with neither.
func TestCheckAcceptanceWebAuthn(t *testing.T) {
	held := FloorOf("/p", &config.Config{})
	f := FloorOf("/p", &config.Config{Grants: config.Grants{Exempt: []string{"x"}}})
	f.UpdatedBy = AcceptedBy + "presence"
	f.Accepted = &Acceptance{Proof: "presence", Channel: "web", From: held.Digest().String(), Nonce: "n",
		WebAuthn: &Assertion{AuthenticatorData: []byte{1}, ClientDataJSON: []byte("{}"), Signature: []byte{2}}}
	none := func(approval.Proof) bool { return false }
	if err := f.CheckAcceptance(held, none); err != nil {
		t.Errorf("presence acceptance with a WebAuthn assertion: %v", err)
	}
	f.Accepted.WebAuthn = nil
	if err := f.CheckAcceptance(held, none); err == nil {
		t.Error("presence acceptance with neither signature: accepted")
	}
}
