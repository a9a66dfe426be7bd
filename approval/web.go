package approval

import (
	"errors"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// The web channel: what an assertion on the approval page proves.
//
// Package ceremony serves the page (loopback, a port and a one-time path
// of its own) and verifies the WebAuthn assertion: a credential enrolled
// in the trust store, the page's origin, user presence, a counter that
// grew, the challenge it was asked to sign. What that proves is decided
// here: presence (ProofPresence), over the grant.Proposal whose digest
// the page showed, and only with the trust store the host pinned at start
// (Pinned); under grants.attestation = "required" the authenticator must
// also be attested, which the host checks against the store it pinned.

// WebCanApprove reports why an approval page could not take a presence
// signature at all, given how many WebAuthn authenticators and ssh keys
// the trust store holds, or nil when one is enrolled (the caller then
// checks the store is the one it pinned). It refuses at once what no
// press on a page could approve.
func WebCanApprove(webauthn, ssh int) error {
	switch {
	case webauthn > 0:
		return nil
	case ssh > 0:
		return errors.New("no WebAuthn authenticator is enrolled, only ssh keys: approve with " + selfcmd.Name() + " approve --ssh KEY, or enroll one with " + selfcmd.Name() + " enroll --web")
	}
	return errors.New("no authenticator enrolled: run " + selfcmd.Name() + " enroll --web or --ssh KEY.pub first, or approve at a terminal")
}

// Web returns what a page's verified assertion proves: presence by
// authenticator (its counter signCount) over signed, the digest the page
// reports it signed (hex), when that is want, the digest of the proposal
// the page showed; an error when it is another.
func Web(signed, want, authenticator string, signCount uint32) (Proven, error) {
	pr := Proven{Proof: ProofPresence, Channel: ChannelWeb, Authenticator: authenticator, SignCount: signCount, Digest: signed}
	if signed != want {
		return pr, errors.New("the page reported a signature over another digest")
	}
	return pr, nil
}
