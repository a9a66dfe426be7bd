package host

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// Renewals (localapi.Renewal). A grant ends with its epoch; what the
// person approved does not have to be asked from scratch. When an epoch
// change revokes grants, revokeEpochLocked keeps what they covered (a
// renewalBase); once the new epoch's catalog is known, setCatalogLocked
// prepares the renewal against it (prepareRenewalLocked) by the rules of
// package approval (renewal.go: approval.Covered.Offer): the tools whose
// definitions are the approved ones are pre-selected, a changed tool is
// offered but not selected, a vanished one is dropped and said so. The
// renewal is a review like any other: approving it goes through grantFor
// and the proof rules of its channel, nothing less. It ends when a grant
// covers its tools, or when another epoch change replaces it.

// A stricter mcpepoch.toml read while the host runs ends the grants it no
// longer counts in the same epoch (policy_raised, revokeOutrankedLocked):
// renewRaisedLocked keeps what they covered in the base too, and
// prepares their renewal on the running epoch at once, at the proof the
// raised policy needs.

// renewalBase is what the revoked grants of one epoch covered.
type renewalBase struct {
	approval.Covered
	from epoch.Epoch
	// raised: grants of it were revoked by a stricter policy (in the
	// running epoch, or before the epoch change that ended the rest).
	raised bool
	grants []epoch.GrantID
}

// renewal is a prepared renewal and the proposal its ID is the digest of.
type renewal struct {
	localapi.Renewal
	proposal *grant.Proposal
	headOK   bool // the proposal names the audit head as read (not a stand-in)
}

// captureRenewalLocked keeps what the live grants of ep cover, before
// they are revoked. Per-call grants are one call each: nothing to renew.
// When ep holds none, an earlier base that no grant settled stays.
func (h *Host) captureRenewalLocked(ep epoch.Epoch, now time.Time) {
	h.renewal = nil
	b := &renewalBase{from: ep}
	for _, g := range h.grants.Grants {
		if g.ExecutionEpoch == ep && g.Live(now) {
			b.add(g)
		}
	}
	if len(b.grants) == 0 {
		return
	}
	h.renewBase = b
}

// renewRaisedLocked keeps what revoked covered, grants of the running
// epoch a stricter policy just ended, in the renewal base (beside what an
// earlier epoch change left there unsettled) and prepares the renewal
// again for the running epoch: its proof is the raised policy's. With
// nothing revoked, a renewal already prepared is prepared again, so that
// it never offers itself at the proof of the policy it was made under.
func (h *Host) renewRaisedLocked(revoked []*grant.Grant) {
	c := h.child
	if c == nil {
		return
	}
	b := h.renewBase
	if b == nil && len(revoked) > 0 {
		b = &renewalBase{from: c.epoch}
	}
	for _, g := range revoked {
		b.add(g)
	}
	if b == nil || len(b.grants) == 0 {
		return
	}
	b.raised = b.raised || len(revoked) > 0
	h.renewBase, h.renewal = b, nil
	h.prepareRenewalLocked(c)
}

// add puts what g covered in b; a per-call grant is one call: nothing to
// renew.
func (b *renewalBase) add(g *grant.Grant) {
	if g.ExpiresWhen == grant.ExpiresPerCall || slices.Contains(b.grants, g.ID) {
		return
	}
	b.grants = append(b.grants, g.ID)
	b.Add(g.ToolScope, g.CredentialScope, g.Definitions, g.ExpiresWhen)
}

// prepareRenewalLocked prepares the renewal of h.renewBase for child c,
// whose catalog h.catalog and h.tools now are, and audits it
// (renewal_prepared). A catalog published again unchanged prepares
// nothing new.
func (h *Host) prepareRenewalLocked(c *child) {
	b := h.renewBase
	if b == nil || (b.from == c.epoch && !b.raised) || h.catalog == nil {
		return
	}
	if r := h.renewal; r != nil && r.Epoch == c.epoch && r.CatalogRevision == h.catalog.Revision {
		return
	}
	r := &renewal{Renewal: localapi.Renewal{FromEpoch: b.from, Epoch: c.epoch, CatalogRevision: h.catalog.Revision,
		Revoked: b.grants, PolicyRaised: b.raised, Expires: grant.ExpiresRunEnds, Tools: []string{}, Credentials: []string{},
		Changed: []localapi.RenewalChange{}, Added: []localapi.RenewalChange{}, Dropped: []string{}}}
	changes := h.changesSinceApprovalLocked()
	catalog := map[string]approval.Offered{}
	for _, name := range slices.Concat(b.Tools, slices.Collect(maps.Keys(changes))) {
		t, offered := h.tools[name]
		if !offered {
			continue
		}
		scopes, perCall := h.policy.Credentials(name)
		catalog[name] = approval.Offered{Definition: string(t.digest), Credentials: scopes, PerCall: perCall, Exempt: !h.policy.Needs(name),
			New: slices.ContainsFunc(changes[name], func(c grant.Change) bool { return c.Kind == "tool_added" })}
	}
	o := b.Offer(catalog)
	r.Tools, r.Credentials, r.Dropped = nonNil(o.Tools), nonNil(o.Credentials), nonNil(o.Dropped)
	for _, name := range o.Changed {
		r.Changed = append(r.Changed, localapi.RenewalChange{Tool: name, Changes: changes[name], Credentials: nonNil(catalog[name].Credentials)})
	}
	for _, name := range o.Added {
		r.Added = append(r.Added, localapi.RenewalChange{Tool: name, Changes: changes[name], Credentials: nonNil(catalog[name].Credentials)})
	}
	need := h.policy.Proof(r.Credentials, h.enrolled)
	r.Proof, r.Action = need, approval.HowToApprove(need)
	if o.Expires > 0 {
		r.Expires = o.Expires.String()
	}
	r.proposal, r.headOK = h.renewalProposalLocked(&r.Renewal)
	if d, err := r.proposal.Digest(); err == nil {
		r.ID, r.ShortCode = d.String(), d.ShortCode()
	} else {
		// No tools to pre-select (a proposal needs one): the renewal
		// still shows what changed, under an id of its own.
		r.ID, r.ShortCode = "renewal:"+string(epoch.NewGrantID(time.Now())), ""
	}
	h.renewal = r
	h.audit.event(audit.TypeRenewalPrepared, c.epoch, h.run, map[string]any{
		"renewal": r.ID, "from_epoch": string(b.from), "revoked_grants": b.grants,
		"tools": r.Tools, "changed_tools": r.ChangedTools(), "added_tools": r.AddedTools(), "dropped_tools": r.Dropped,
		"credential_scope": listField(r.Credentials), "expires_when": r.Expires, "catalog_revision": string(r.CatalogRevision),
		"policy_raised": strconv.FormatBool(b.raised), "proof": need.String(),
	})
	h.logf("epoch %s: renewal %s prepared: tools %v; changed (not pre-selected) %v; new (not pre-selected) %v; dropped %v: a person approves it with "+selfcmd.Name()+" approve",
		c.epoch, orDashCode(r.ShortCode), r.Tools, r.ChangedTools(), r.AddedTools(), r.Dropped)
}

// renewalProposalLocked is the proposal of r's pre-selected scope; the
// audit head is the one in the head file now (a written record), or the
// empty log's stand-in when it cannot be read (headOK false: such a
// proposal is not offered for a signature).
func (h *Host) renewalProposalLocked(r *localapi.Renewal) (*grant.Proposal, bool) {
	head, ok, err := audit.ReadHead(audit.HeadPath(layout.Audit(h.opts.Dir)))
	if !ok || err != nil {
		head.Seq, head.Hash = 0, grant.Digest{}.String()
	}
	return &grant.Proposal{V: grant.ProposalVersion, AgentRun: string(h.run), ExecutionEpoch: r.Epoch,
		CatalogRevision: string(r.CatalogRevision), ToolScope: r.Tools, CredentialScope: r.Credentials,
		ExpiresWhen: r.Expires, Nonce: grant.NewNonce(), AuditHead: grant.AuditHead{Seq: head.Seq, Hash: head.Hash}}, ok && err == nil
}

// renewalPageLocked returns the renewal's own proposal in place of p
// when p proposes exactly the renewal as prepared (and its audit head was
// read), and what the approval page shows of the renewal. The renewal is
// the one checkRenewalLocked found current.
func (h *Host) renewalPageLocked(p *grant.Proposal) (*grant.Proposal, *ceremony.Renewal) {
	r := h.renewal
	view := &ceremony.Renewal{FromEpoch: string(r.FromEpoch), SameEpoch: r.FromEpoch == r.Epoch, PolicyRaised: r.PolicyRaised, Dropped: r.Dropped}
	for _, c := range slices.Concat(r.Changed, r.Added) {
		if slices.Contains(p.ToolScope, c.Tool) {
			continue // included by the person
		}
		for _, d := range c.Changes {
			view.Changed = append(view.Changed, ceremony.CatalogLine{Change: d.Kind, Tool: c.Tool, Detail: d.Detail})
		}
		if len(c.Changes) == 0 {
			view.Changed = append(view.Changed, ceremony.CatalogLine{Change: "definition_changed", Tool: c.Tool})
		}
	}
	q := r.proposal
	if r.headOK && slices.Equal(q.ToolScope, p.ToolScope) && slices.Equal(q.CredentialScope, p.CredentialScope) &&
		q.ExpiresWhen == p.ExpiresWhen && q.ExecutionEpoch == p.ExecutionEpoch && q.CatalogRevision == p.CatalogRevision {
		return q, view
	}
	return p, view
}

// changesSinceApprovalLocked groups the catalog's changes since the last
// approval by tool.
func (h *Host) changesSinceApprovalLocked() map[string][]grant.Change {
	out := map[string][]grant.Change{}
	if h.approved == nil || h.catalog == nil {
		return out
	}
	for _, c := range grant.DiffCatalogs(h.approved.tools, h.catalog.Tools) {
		out[c.Tool] = append(out[c.Tool], c)
	}
	return out
}

// settleRenewalLocked runs once grant g is made (from a request naming
// the renewal id, or none): a renewal whose pre-selected tools g covers is
// done, and so is its base.
func (h *Host) settleRenewalLocked(g *grant.Grant, id string, fields map[string]any) {
	r := h.renewal
	if r == nil {
		return
	}
	if id == r.ID {
		fields["renewal"] = r.ID
	}
	if id == r.ID || len(r.Tools) > 0 && subset(r.Tools, g.ToolScope) && g.ExpiresWhen != grant.ExpiresPerCall {
		h.renewal, h.renewBase = nil, nil
	}
}

// checkRenewalLocked refuses an approval that names a renewal the host no
// longer offers: the person saw another one.
func (h *Host) checkRenewalLocked(id string) error {
	if id == "" {
		return nil
	}
	if h.renewal == nil || h.renewal.ID != id {
		return fmt.Errorf("the renewal %s is no longer offered (approved already, or replaced by a newer epoch or catalog): review again", id)
	}
	return nil
}

// currentRenewalLocked returns the renewal for the running epoch, nil
// when none is prepared.
func (h *Host) currentRenewalLocked() *localapi.Renewal {
	if h.renewal == nil || h.child == nil || h.renewal.Epoch != h.child.epoch {
		return nil
	}
	r := h.renewal.Renewal
	return &r
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func orDashCode(s string) string {
	if s == "" {
		return "(nothing pre-selected)"
	}
	return s
}
