package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
)

// Presence: grants signed by an enrolled FIDO authenticator on the
// approval page (package ceremony). The host starts the page's server on
// first need, on the loopback interface and a port of its own; each
// approval is a grant.Proposal whose Digest is the WebAuthn challenge. The
// grant is made only when the page reports a verified assertion over that
// digest (approval.Web, the web channel's rule), the trust store still has
// the digest pinned at start (approval.Pinned), and the proposal still
// names the running epoch and catalog (grantFor checks them as for any
// approval): an approval for a superseded epoch is refused and audited.

// webApproval is one pending approval page.
type webApproval struct {
	// shared: the same proposal was asked for again, by another screen
	// or a held call (openPage); guarded by h.pres.mu.
	shared   bool
	req      ApproveRequest
	proposal *grant.Proposal
	digest   grant.Digest
	page     *ceremony.Approval
	done     chan struct{} // closed once g or err is set
	g        *grant.Grant
	err      error
	at       time.Time // when it was opened
}

// maxPendingApprovals bounds the approval pages and the ssh proposals a
// host keeps, each: a same-user process that asks in a loop makes the
// oldest ones go (an undecided page is cancelled) instead of the host's
// memory grow, as the socket bounds its connections.
const maxPendingApprovals = 64

// presence is the approval page server and its pending pages; its own
// lock, never held while taking h.mu.
type presence struct {
	mu     sync.Mutex
	srv    *ceremony.Server
	pages  map[string]*webApproval // by digest
	ssh    map[string]*sshProposal // by digest; each used once
	dir    string                  // the trust store's directory
	pinned string                  // its Digest at start; "" when it could not be read
	// pinnedStore is the store read at start (nil when it could not be
	// read, openErr says why), for the trust_pinned record and the root
	// shown to people.
	pinnedStore *trust.Store
	openErr     error
}

// proposeLocked builds the proposal of req for the running epoch: what the
// person signs. head is the audit log's last written record.
func (h *Host) proposeLocked(req ApproveRequest, head audit.Head) (*grant.Proposal, ceremony.Request, error) {
	tools, creds, err := h.scopeLocked(req)
	if err != nil {
		return nil, ceremony.Request{}, err
	}
	tools, creds = slices.Sorted(slices.Values(tools)), slices.Sorted(slices.Values(creds))
	if creds == nil {
		creds = []string{}
	}
	if head.Hash == "" {
		head.Hash = grant.Digest{}.String() // an empty log
	}
	if err := h.checkRenewalLocked(req.Renewal); err != nil {
		return nil, ceremony.Request{}, err
	}
	p := &grant.Proposal{V: grant.ProposalVersion, AgentRun: string(h.run), ExecutionEpoch: h.child.epoch,
		CatalogRevision: string(h.catalog.Revision), ToolScope: tools, CredentialScope: creds,
		ExpiresWhen: req.Expires, Nonce: grant.NewNonce(), AuditHead: grant.AuditHead{Seq: head.Seq, Hash: head.Hash}}
	var renewal *ceremony.Renewal
	if req.Renewal != "" {
		// The renewal's own proposal when it is what is asked: one
		// digest and short code on every screen that offers it.
		p, renewal = h.renewalPageLocked(p)
	}
	d, err := p.Digest()
	if err != nil {
		return nil, ceremony.Request{}, err
	}
	rv := h.reviewLocked()
	cr := ceremony.Request{Digest: d, Server: h.opts.Label, AgentRun: string(h.run), Epoch: string(h.child.epoch),
		ExpiresWhen: req.Expires, Tools: tools, CredentialScopes: creds, Renewal: renewal, WaitForHost: true}
	for _, l := range rv.Identity {
		il := ceremony.IdentityLine{Name: string(l.Role) + " " + l.Path, Value: string(l.Digest)}
		if l.Missing {
			il.Value = "(absent)"
		}
		if l.Changed {
			il.Was = string(l.Approved)
		}
		cr.Identity = append(cr.Identity, il)
	}
	for _, c := range rv.CatalogChanges {
		cr.Catalog = append(cr.Catalog, ceremony.CatalogLine{Change: c.Kind, Tool: c.Tool, Detail: c.Detail})
	}
	return p, cr, nil
}

// propose reads the audit head and builds the proposal of req (see
// proposeLocked); it returns req narrowed to exactly what is proposed.
func (h *Host) propose(req ApproveRequest) (*grant.Proposal, ceremony.Request, ApproveRequest, error) {
	if req.Expires == "" {
		req.Expires = grant.ExpiresRunEnds
	}
	if err := grant.ParseExpiry(req.Expires); err != nil {
		return nil, ceremony.Request{}, req, err
	}
	head, _, err := audit.ReadHead(audit.HeadPath(layout.Audit(h.opts.Dir)))
	if err != nil {
		return nil, ceremony.Request{}, req, fmt.Errorf("the audit log's head cannot be read: %v", err)
	}
	h.mu.Lock()
	p, cr, err := h.proposeLocked(req, head)
	h.mu.Unlock()
	if err != nil {
		return nil, ceremony.Request{}, req, err
	}
	req.Epoch, req.Catalog = p.ExecutionEpoch, localapi.Revision(p.CatalogRevision)
	req.Tools, req.Credentials, req.All = p.ToolScope, p.CredentialScope, false
	return p, cr, req, nil
}

// approveWeb opens an approval page for req and returns it.
// It refuses at once what no press on the page could approve: no WebAuthn
// authenticator enrolled, or a trust store changed since the host started.
func (h *Host) approveWeb(peer notify.Peer, req ApproveRequest) (localapi.WebApproval, error) {
	if err := h.pageCanApprove(); err != nil {
		return localapi.WebApproval{}, err
	}
	wa, cr, err := h.openPage(peer, req)
	if err != nil {
		return localapi.WebApproval{}, err
	}
	return localapi.WebApproval{URL: wa.page.URL(), Digest: cr.Digest.String(), ShortCode: cr.Digest.ShortCode()}, nil
}

// openPage proposes req, opens its approval page and starts waiting for
// its decision (awaitPage): the page's grant, if any, is made for peer.
func (h *Host) openPage(peer notify.Peer, req ApproveRequest) (*webApproval, ceremony.Request, error) {
	p, cr, req, err := h.propose(req)
	if err != nil {
		return nil, cr, err
	}
	srv, err := h.ceremonyServer()
	if err != nil {
		return nil, cr, err
	}
	h.pres.mu.Lock()
	if wa := h.pres.pages[cr.Digest.String()]; wa != nil && !isDone(wa.done) {
		// The same proposal asked again (a renewal offered on several
		// screens): one page, one decision.
		wa.shared = true
		h.pres.mu.Unlock()
		return wa, cr, nil
	}
	h.pres.mu.Unlock()
	page, err := srv.Approve(cr)
	if err != nil {
		return nil, cr, err
	}
	wa := &webApproval{req: req, proposal: p, digest: cr.Digest, page: page, done: make(chan struct{}), at: time.Now()}
	h.pres.mu.Lock()
	if len(h.pres.pages) >= maxPendingApprovals {
		oldest := oldestKey(h.pres.pages, func(wa *webApproval) time.Time { return wa.at })
		h.pres.pages[oldest].page.Cancel()
		delete(h.pres.pages, oldest)
	}
	h.pres.pages[cr.Digest.String()] = wa
	h.pres.mu.Unlock()
	go h.awaitPage(peer, wa)
	h.logf("epoch %s: approval page for %v (code %s): %s", p.ExecutionEpoch, p.ToolScope, cr.Digest.ShortCode(), page.URL())
	return wa, cr, nil
}

// proposeOnly proposes req as openPage does, for an ask whose approval
// is a form's accept in the MCP client: it opens no page, and so starts no
// approval page server. Its done never closes: the grant comes from the
// form (or from mcpepoch approve), which releases the held calls itself.
func (h *Host) proposeOnly(_ notify.Peer, req ApproveRequest) (*webApproval, ceremony.Request, error) {
	p, cr, req, err := h.propose(req)
	if err != nil {
		return nil, cr, err
	}
	return &webApproval{req: req, proposal: p, digest: cr.Digest, at: time.Now()}, cr, nil
}

// ceremonyServer returns the approval page server, starting it on first
// need.
func (h *Host) ceremonyServer() (*ceremony.Server, error) {
	h.pres.mu.Lock()
	defer h.pres.mu.Unlock()
	if h.pres.srv != nil {
		return h.pres.srv, nil
	}
	srv, err := ceremony.Listen(ceremony.Config{TrustDir: h.pres.dir, Refused: func(r ceremony.Refusal) {
		h.audit.event(audit.TypeApprovalRefused, "", h.run, map[string]any{"channel": "web", "ceremony": r.Ceremony, "reason": r.Reason.Error()})
	}})
	if err != nil {
		return nil, fmt.Errorf("approval page: %v", err)
	}
	h.pres.srv = srv
	h.logf("approval pages on %s", srv.Origin())
	return srv, nil
}

// awaitPage turns the page's decision into a grant, or a refusal.
func (h *Host) awaitPage(peer notify.Peer, wa *webApproval) {
	defer close(wa.done)
	var d ceremony.Decision
	select {
	case d = <-wa.page.Decided():
	case <-h.ctx.Done():
		wa.err = errors.New("the host ended before the page was decided")
		return
	}
	if d.Outcome != ceremony.Approved {
		wa.err = fmt.Errorf("the approval page ended: %s", d.Outcome)
		return
	}
	web, err := approval.Web(d.Digest.String(), wa.digest.String(), d.AuthenticatorID, d.SignCount)
	if err != nil {
		wa.err = err
	} else if err := h.checkPinned(); err != nil {
		wa.err = err
	} else {
		wa.g, wa.err = h.grantFor(peer, wa.req, proven{Proven: web, proposal: wa.proposal})
	}
	if wa.err != nil {
		h.audit.event(audit.TypeApprovalRefused, wa.req.Epoch, h.run, map[string]any{
			"channel": approval.ChannelWeb, "proof": string(approval.ProofPresence), "authenticator": d.AuthenticatorID,
			"signed_digest": d.Digest.String(), "reason": wa.err.Error()})
	}
	wa.page.Settle(wa.err) // the page shows this verdict, not the signature's
}

// waitWeb waits up to wait for the decision of the page with digest.
func (h *Host) waitWeb(ctx context.Context, digest string, wait time.Duration) (g *grant.Grant, decided bool, err error) {
	h.pres.mu.Lock()
	wa := h.pres.pages[digest]
	h.pres.mu.Unlock()
	if wa == nil {
		return nil, true, fmt.Errorf("no approval page with digest %s at this host", digest)
	}
	select {
	case <-wa.done:
		return wa.g, true, wa.err
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, false, nil
}

// pageCanApprove reports why an approval page could not take a presence
// signature the host counts (approval.WebCanApprove, checkPinned), or nil.
func (h *Host) pageCanApprove() error {
	s, err := trust.Open(h.pres.dir)
	if err != nil {
		return fmt.Errorf("the trust store cannot be read: %v", err)
	}
	if err := approval.WebCanApprove(len(s.Kind(trust.KindWebAuthn)), len(s.Kind(trust.KindSSH))); err != nil {
		return err
	}
	return h.checkPinned()
}

// checkPinned refuses presence when the trust store is not the one the
// host read at start (approval.Pinned): an authenticator added or removed
// while it runs (trust.Store.Digest) is audited (trust_store_changed) and
// counts for nothing until the host restarts.
func (h *Host) checkPinned() error {
	s, err := trust.Open(h.pres.dir)
	if err != nil {
		return fmt.Errorf("the trust store cannot be read: %v", err)
	}
	if err := approval.Pinned(h.pres.pinned, s.Digest(), s.Path()); err != nil {
		h.audit.event(audit.TypeTrustStoreChanged, "", h.run, map[string]any{"pinned": h.pres.pinned, "found": s.Digest(), "path": s.Path()})
		return err
	}
	return nil
}

// closePresence stops the approval page server; pending pages end.
func (h *Host) closePresence() {
	h.pres.mu.Lock()
	defer h.pres.mu.Unlock()
	if h.pres.srv != nil {
		h.pres.srv.Close()
	}
}

// oldestKey returns the key of m's oldest entry, by at.
func oldestKey[V any](m map[string]V, at func(V) time.Time) string {
	var key string
	var first time.Time
	for k, v := range m {
		if t := at(v); key == "" || t.Before(first) {
			key, first = k, t
		}
	}
	return key
}
