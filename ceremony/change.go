package ceremony

import (
	"errors"

	"github.com/mcpepoch/mcpepoch/trust"
)

// ApproveChange opens a page that asks for an enrolled WebAuthn
// authenticator's touch to make change c (from trust.Store.Propose):
// enrolling an ssh key, or removing an authenticator. On Approve the server
// verifies the assertion over c.Requirement.Challenge and applies c to the
// trust store, which records the counter; the Decision (Outcome Approved,
// Digest the challenge) arrives once the store is written. Decline leaves
// the store as it was. A change that needs no presence signature (the
// first authenticator) is refused here: apply it directly, and say so.
func (s *Server) ApproveChange(c *trust.Change) (*Approval, error) {
	if c == nil || !c.Requirement.Presence {
		return nil, errors.New("ceremony: this change needs no presence signature; apply it to the store directly")
	}
	a := &Approval{s: s, req: Request{Digest: c.Requirement.Challenge}, change: c, done: make(chan Decision, 1)}
	a.token, a.url = s.add(a)
	return a, nil
}

// changeView is what the page shows of a store change.
type changeView struct {
	Op, Kind, Name, ID string
}

func viewOf(c *trust.Change) *changeView {
	a := c.Authenticator
	return &changeView{Op: c.Op, Kind: a.Kind, Name: a.Name, ID: a.ID}
}
