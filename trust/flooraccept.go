package trust

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/grant"
)

// PolicyNamespace is the SSHSIG namespace of a signature that accepts a
// weakening of a policy floor (ssh-keygen -Y sign -n mcpepoch-policy@v1):
// not a grant's, nor a trust-store change's, so that no signature made for
// one counts for another.
const PolicyNamespace = "mcpepoch-policy@v1"

// Acceptance is how a person accepted a floor in place of the one before
// it (mcpepoch policy accept), kept in the floor file as "accepted" so
// that a host can check it before it takes the floor:
//
//	{"proof": "presence", "channel": "ssh", "from": "sha256:…", "nonce": "…",
//	 "authenticator": "SHA256:…", "signCount": 7, "signature": "-----BEGIN SSH SIGNATURE-----…"}
//
// or, accepted on a page with a WebAuthn authenticator (channel "web"),
// "webauthn": {"authenticatorData", "clientDataJSON", "signature"} in
// place of "signature".
//
// From is the Digest of the floor replaced, exactly as it was written (its
// times and its own acceptance included): an acceptance counts only in
// place of that floor, so one made for an earlier move cannot be applied
// again to another. Signature is the SSHSIG armour, in PolicyNamespace,
// over AcceptDigest(replaced, accepted, Nonce); it is present for proof
// presence only. A terminal or same-user acceptance carries no signature:
// it is only as strong as the level it names, which anything of the same
// user can write.
type Acceptance struct {
	Proof         string `json:"proof"`   // approval.Proof: "presence", "terminal", "same-user"
	Channel       string `json:"channel"` // "ssh", "terminal", "script"
	From          string `json:"from"`
	Nonce         string `json:"nonce"`
	Authenticator string `json:"authenticator,omitempty"`
	SignCount     uint32 `json:"signCount,omitempty"`
	Signature     string `json:"signature,omitempty"`
	// WebAuthn is the assertion of a WebAuthn authenticator over
	// AcceptDigest(replaced, accepted, Nonce) (channel "web", mcpepoch
	// policy accept --web), in place of Signature; byte strings in
	// standard base64.
	WebAuthn *Assertion `json:"webauthn,omitempty"`
}

// Digest returns the SHA-256 of the JSON of f as it stands, every member
// included (updatedAt, updatedBy, accepted): what an acceptance names as
// the floor it replaces (Acceptance.From). Two writes of the same policy
// have different digests.
func (f Floor) Digest() grant.Digest {
	b, _ := json.Marshal(f)
	return sha256.Sum256(b)
}

// acceptance is what a person signs to accept a weakening: the floor
// replaced, by digest, and the policy that replaces it (without times, who
// wrote it or how it was accepted), for one project root, with a fresh
// nonce.
type acceptance struct {
	V     int    `json:"v"`
	Root  string `json:"root"`
	From  string `json:"from"`
	To    Floor  `json:"to"`
	Nonce string `json:"nonce"`
}

// AcceptDigest returns the digest a person signs (with presence) to
// replace the floor from by to: the SHA-256 of the JSON of {"v": 2,
// "root", "from": from.Digest(), "to", "nonce"}, to without its
// updatedAt, updatedBy and accepted (what is signed cannot cover the
// signature). Its short code (grant.Digest.ShortCode) is what the screen
// shows beside the weakenings.
func AcceptDigest(from, to Floor, nonce string) grant.Digest {
	to.V, to.UpdatedAt, to.UpdatedBy, to.Accepted = floorVersion, time.Time{}, "", nil
	b, _ := json.Marshal(acceptance{V: 2, Root: to.Root, From: from.Digest().String(), To: to, Nonce: nonce})
	return sha256.Sum256(b)
}

// CheckAcceptance checks what of f's acceptance can be checked without a
// signature: that f says it was accepted (updatedBy "accepted:LEVEL", an
// "accepted" member of that level, with a nonce) in place of exactly the
// floor held, and at a level that counts under held (counts: held's proof
// list; presence always counts). For proof presence the caller verifies
// Signature over AcceptDigest(held, f, Nonce) against its pinned trust
// store. The error says why f cannot replace held.
func (f Floor) CheckAcceptance(held Floor, counts func(approval.Proof) bool) error {
	a := f.Accepted
	switch {
	case a == nil:
		return fmt.Errorf("it says %q but carries no acceptance (no \"accepted\" member)", f.UpdatedBy)
	case f.UpdatedBy != AcceptedBy+a.Proof:
		return fmt.Errorf("it says %q but its acceptance is of proof %q", f.UpdatedBy, a.Proof)
	case a.Nonce == "":
		return fmt.Errorf("its acceptance has no nonce")
	case a.From != held.Digest().String():
		return fmt.Errorf("its acceptance replaces the floor %s, not the one this host holds (%s): an acceptance made for another change", a.From, held.Digest())
	case a.Proof == string(approval.ProofPresence):
		if a.Signature == "" && a.WebAuthn == nil {
			return fmt.Errorf("its acceptance of proof presence carries no signature")
		}
		return nil
	case !counts(approval.Proof(a.Proof)):
		return fmt.Errorf("it was accepted at proof %q, which the floor held does not count", a.Proof)
	}
	return nil
}

// VerifyAcceptanceAssertion checks that as is a WebAuthn assertion by
// signer (a WebAuthn authenticator of a trust store) over d, for RP ID
// localhost at a localhost origin, with user presence: an acceptance of
// channel "web" (Acceptance.WebAuthn). The port, the counter and single
// use were checked by the page that collected it; a replay is refused by
// Acceptance.From and the nonce d covers.
func VerifyAcceptanceAssertion(signer *Authenticator, as *Assertion, d grant.Digest) error {
	return verifyAssertion(signer, as, d[:])
}

// AcceptedBy begins the updatedBy of a floor a person accepted
// ("accepted:LEVEL").
const AcceptedBy = "accepted:"

// FloorRoot is the project root a floor is kept for: dir made absolute,
// with symbolic links resolved where they can be.
func FloorRoot(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}
