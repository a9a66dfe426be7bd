package ceremony

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/trust"
)

// Request is what an approval page shows and what approving it signs.
// Everything but Digest is for the person's eyes; Digest is the WebAuthn
// challenge, and must be the Digest of the grant.Proposal these lines
// describe.
type Request struct {
	Digest      grant.Digest
	Server      string // server label
	AgentRun    string
	Epoch       string
	ExpiresWhen string
	// Identity is what runs, each line marked with what it was at the last
	// approval when it changed.
	Identity []IdentityLine
	// Catalog is the catalog diff since the last approval, one line per
	// tool.
	Catalog          []CatalogLine
	Tools            []string // tools the grant covers
	CredentialScopes []string // credential scopes the grant covers
	// Renewal, when set, says that the request renews grants an epoch
	// change ended: the page shows it first.
	Renewal *Renewal
	// WaitForHost makes the page, once its assertion is verified, wait
	// for the caller's own verdict (Approval.Settle) and show that: the
	// signature is only what the caller decides on, and a refusal (a
	// trust store changed since start, an epoch superseded) must reach
	// the person who pressed Approve, with its fix. Without it the page
	// says "Approved." as soon as the signature holds.
	WaitForHost bool
}

// Renewal is what the page shows of a renewal (the host's prepared
// approval after an epoch change, or a stricter policy, revoked grants):
// the epoch whose grants ended and why, the tools left out because they are new or their definition changed (with what
// changed), and the tools no longer offered.
type Renewal struct {
	FromEpoch string
	// SameEpoch: the grants ended in the epoch the request is for;
	// PolicyRaised: a stricter mcpepoch.toml ended (some of) them.
	SameEpoch, PolicyRaised bool
	Changed                 []CatalogLine // Change is the kind of change
	Dropped                 []string
}

// IdentityLine is one part of the execution identity: entry, a lockfile,
// the runtime … Was is its value at the last approval, empty when
// unchanged.
type IdentityLine struct {
	Name, Value, Was string
}

// CatalogLine is one tool in the catalog diff. Change is "added",
// "removed", "changed" or "unchanged"; Detail says what changed (schema
// defaults included).
type CatalogLine struct {
	Change, Tool, Detail string
}

// Outcome is how an approval ended.
type Outcome string

// Outcomes of an approval.
const (
	Approved  Outcome = "approved"  // an enrolled authenticator signed the Digest
	Declined  Outcome = "declined"  // the person pressed Decline
	Cancelled Outcome = "cancelled" // the caller cancelled it
)

// Decision is the verified end of an approval.
type Decision struct {
	Outcome Outcome
	// Digest is the challenge that was signed (for Approved) or the
	// request's Digest when it ended.
	Digest grant.Digest
	// AuthenticatorID, SignCount and UserVerified describe the signature,
	// for Approved only; the counter is already recorded in the trust
	// store.
	AuthenticatorID string
	SignCount       uint32
	UserVerified    bool
	// Assertion is the signed assertion itself (Approved only), for a
	// caller that keeps it as evidence (a policy floor's acceptance).
	Assertion *trust.Assertion
	At        time.Time
}

// Approval is one pending approval page.
type Approval struct {
	s     *Server
	token string
	url   string
	done  chan Decision

	settle chan error // the caller's verdict on an Approved decision (WaitForHost)

	mu      sync.Mutex // held across a whole step, so steps of one page take turns
	req     Request
	older   []grant.Digest // superseded challenges
	decided bool
	change  *trust.Change  // set for ApproveChange: applied on Approve
	policy  *PolicyRequest // set for AcceptPolicy: what the page shows
}

// Approve opens an approval page for req and returns it; the person opens
// Approval.URL. req.Digest must not be zero.
func (s *Server) Approve(req Request) (*Approval, error) {
	if req.Digest == (grant.Digest{}) {
		return nil, errors.New("ceremony: approval without a digest")
	}
	a := &Approval{s: s, req: req, done: make(chan Decision, 1), settle: make(chan error, 1)}
	a.token, a.url = s.add(a)
	return a, nil
}

// SettleWait bounds how long the page waits for Approval.Settle after a
// verified assertion before it tells the person to look at the screen
// that sent them.
const SettleWait = 2 * time.Minute

// Settle gives the caller's verdict on an Approved decision of a page
// whose Request has WaitForHost: nil when the approval took effect, or the
// reason it did not, shown on the page as the refusal. Only the first call
// counts; it never blocks.
func (a *Approval) Settle(err error) {
	select {
	case a.settle <- err:
	default:
	}
}

// URL returns the page, http://localhost:PORT/TOKEN/.
func (a *Approval) URL() string { return a.url }

// Decided delivers the one Decision of this approval, then nothing more.
func (a *Approval) Decided() <-chan Decision { return a.done }

// Supersede replaces what the page asks for (a new epoch or catalog came
// while it was open). An assertion over the old Digest is refused from now
// on, even if the person already touched their authenticator for it: they
// approved what they saw, not what is current. It fails with ErrDecided
// after a decision.
func (a *Approval) Supersede(req Request) error {
	if req.Digest == (grant.Digest{}) {
		return errors.New("ceremony: approval without a digest")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.decided {
		return ErrDecided
	}
	if a.change != nil {
		return errors.New("ceremony: a store change is not superseded; cancel it and propose again")
	}
	a.older = append(a.older, a.req.Digest)
	a.req = req
	return nil
}

// Cancel ends the approval with Outcome Cancelled, unless it was decided.
func (a *Approval) Cancel() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finish(Decision{Outcome: Cancelled, Digest: a.req.Digest})
}

// finish delivers d once and takes the page down; a.mu is held.
func (a *Approval) finish(d Decision) bool {
	if a.decided {
		return false
	}
	a.decided = true
	d.At = a.s.cfg.Now()
	a.done <- d
	a.s.remove(a.token)
	return true
}

func (a *Approval) where() (string, string) { return "approval", a.url }

func (a *Approval) serve(w http.ResponseWriter, r *http.Request, step string) {
	if step == "assert" {
		a.mu.Lock()
		wait := a.assert(w, r)
		a.mu.Unlock()
		if wait {
			a.awaitSettle(w, r)
		}
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch step {
	case "":
		a.page(w)
	case "decline":
		if a.decided {
			a.s.refuse(w, "approval", a.url, ErrDecided)
			return
		}
		a.finish(Decision{Outcome: Declined, Digest: a.req.Digest})
		writeJSON(w, http.StatusOK, map[string]string{"outcome": string(Declined)})
	default:
		http.NotFound(w, r)
	}
}

// page renders the approval page with the assertion options of the
// current request embedded: what the person sees is what they sign.
func (a *Approval) page(w http.ResponseWriter) {
	if a.decided {
		http.Error(w, ErrDecided.Error(), http.StatusGone)
		return
	}
	store, err := trust.Open(a.s.cfg.TrustDir)
	var opts []byte
	if err == nil {
		var o any
		if o, _, err = a.s.begin(store, a.req.Digest); err == nil {
			opts, err = json.Marshal(o)
		}
	}
	view := pageView{Kind: "approval", Request: &a.req, ShortCode: a.req.Digest.ShortCode(), Options: string(opts)}
	if a.change != nil {
		view.Kind, view.Request, view.Change = "change", nil, viewOf(a.change)
	}
	if a.policy != nil {
		view.Kind, view.Request, view.Policy = "policy", nil, a.policy
	}
	if store != nil {
		view.Root = rootOf(store)
	}
	if err != nil {
		view.Error = err.Error()
	}
	render(w, view)
}

// assert verifies a posted assertion and, when it holds, records the
// counter and delivers the decision. It reports whether the answer must
// wait for the caller's verdict (awaitSettle); otherwise it has answered.
// a.mu is held.
func (a *Approval) assert(w http.ResponseWriter, r *http.Request) (wait bool) {
	if a.decided {
		a.s.refuse(w, "approval", a.url, ErrDecided)
		return false
	}
	body, err := readBody(r)
	if err != nil {
		a.s.refuse(w, "approval", a.url, err)
		return false
	}
	if d, ok := clientChallenge(body); ok && d != a.req.Digest && slices.Contains(a.older, d) {
		a.s.refuse(w, "approval", a.url, ErrSuperseded)
		return false
	}
	store, err := trust.Open(a.s.cfg.TrustDir)
	if err != nil {
		a.s.refuse(w, "approval", a.url, err)
		return false
	}
	p, err := a.s.verify(store, a.req.Digest, body)
	switch {
	case err != nil:
	case a.change != nil:
		err = store.Apply(a.change, &p) // records the counter with the change
	default:
		err = store.RecordUse(p.AuthenticatorID, p.SignCount)
	}
	if err != nil {
		a.s.refuse(w, "approval", a.url, err)
		return false
	}
	a.finish(Decision{Outcome: Approved, Digest: p.Challenge, AuthenticatorID: p.AuthenticatorID,
		SignCount: p.SignCount, UserVerified: p.UserVerified, Assertion: p.Assertion})
	if a.req.WaitForHost && a.change == nil {
		return true
	}
	writeJSON(w, http.StatusOK, map[string]string{"outcome": string(Approved)})
	return false
}

// awaitSettle answers a verified assertion with the caller's verdict:
// {"outcome": "approved"}, {"outcome": "refused", "error": …}, or, when
// none came within SettleWait, {"outcome": "pending", "error": …}. The
// signature counted either way: the answer is 200.
func (a *Approval) awaitSettle(w http.ResponseWriter, r *http.Request) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(SettleWait + 10*time.Second))
	t := time.NewTimer(SettleWait)
	defer t.Stop()
	select {
	case err := <-a.settle:
		if err != nil {
			writeJSON(w, http.StatusOK, map[string]string{"outcome": "refused", "error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"outcome": string(Approved)})
	case <-t.C:
		writeJSON(w, http.StatusOK, map[string]string{"outcome": "pending",
			"error": "signed, but no decision came back yet: see the screen that sent you here"})
	case <-r.Context().Done():
	}
}
