package ceremony

import (
	"errors"

	"github.com/mcpepoch/mcpepoch/grant"
)

// PolicyRequest is what a policy acceptance page shows and what accepting
// it signs: the weakenings of a project's policy floor that mcpepoch.toml
// asks for (mcpepoch policy accept --web). Digest is the WebAuthn
// challenge, trust.AcceptDigest of the floor replaced, the one that
// replaces it and a nonce; the lines are for the person's eyes.
type PolicyRequest struct {
	Digest  grant.Digest
	Project string       // the project root
	Changes []PolicyLine // each weakening, sorted by setting
}

// PolicyLine is one weakening: the setting ("grants.proof"), the floor's
// value and mcpepoch.toml's, as TOML.
type PolicyLine struct {
	Setting, From, To string
}

// AcceptPolicy opens a page that asks for an enrolled WebAuthn
// authenticator's touch over req.Digest, with buttons "Accept" and
// "Decline". On Accept the server verifies the assertion (origin with its
// port, challenge, user presence, a counter that grew, single use) and
// records the counter; the Decision carries the assertion itself
// (Decision.Assertion) for the caller to keep with the floor, where a host
// verifies it again against the trust store it pinned.
func (s *Server) AcceptPolicy(req PolicyRequest) (*Approval, error) {
	if req.Digest == (grant.Digest{}) || len(req.Changes) == 0 {
		return nil, errors.New("ceremony: a policy acceptance needs a digest and at least one change")
	}
	a := &Approval{s: s, req: Request{Digest: req.Digest}, policy: &req, done: make(chan Decision, 1)}
	a.token, a.url = s.add(a)
	return a, nil
}
