package host

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/localapi"

	"maps"
	"strconv"

	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// Error codes of refused authorizations (see protocol.go for the others).
const (
	CodeAuthorizationRequired = -31010 // no grant covers the call
	CodeAuthorizationStale    = -31011 // the grant covering it names an older execution epoch
)

// Pending is a call refused for lack of a grant, shown by mcpepoch approve.
type Pending = localapi.Pending

// snapshot is what a human saw when approving: the base of the next review's
// "what changed".
type snapshot struct {
	epoch    epoch.Epoch
	identity *build.Identity
	tools    []json.RawMessage
}

// authorizeLocked applies the grant policy to a tools/call before anything
// else (seed: the stale grant is the error a call gets even when it was also
// prepared against an older catalog). It returns the refusal to send, or
// the grant that covers the call (nil when the tool needs none). h.mu is
// held: the epoch cannot change between this check and the dispatch, since
// a restart switches epochs and revokes grants under the same lock.
func (h *Host) authorizeLocked(m *jsonrpc.Message, p *callParams) ([]byte, *grant.Grant) {
	ep := h.child.epoch
	def := ""
	if t, ok := h.tools[p.Name]; ok {
		def = string(t.digest)
	}
	d := h.grants.Check(h.policy, p.Name, def, ep, time.Now())
	if d.Refusal == "" {
		return nil, d.Grant
	}
	if _, known := h.tools[p.Name]; d.Refusal == grant.AuthorizationRequired && h.tools != nil && !known {
		return nil, nil // no grant could cover it: the catalog check answers unknown_tool
	}
	if line := h.driftRefusalLocked(m, p.Name); line != nil {
		return line, nil
	}
	h.notePendingLocked(p.Name, d, ep)
	// What a person should do; never a command a program could run to
	// approve by itself.
	action := approval.HowToApprove(h.policy.Proof(d.Credentials, h.enrolled))
	fields := map[string]any{"reason": d.Refusal, audit.FieldTool: p.Name, "current_epoch": string(ep)}
	var line []byte
	if d.Refusal == grant.AuthorizationStale {
		catalogChanged := h.catalog != nil && d.Stale.CatalogRevision != "" && d.Stale.CatalogRevision != string(h.catalog.Revision)
		if t, ok := h.tools[p.Name]; ok {
			if known, listed := h.informed[p.Name]; listed && known != t.digest {
				catalogChanged = true
			}
		}
		fields["approved_epoch"] = string(d.Stale.ExecutionEpoch)
		fields["reason"] = "stale_epoch"
		line = jsonrpc.ErrorLine(m.ID, CodeAuthorizationStale,
			fmt.Sprintf("authorization_stale: server execution epoch changed (approved %s, current %s); refresh tool metadata and request authorization: %s", d.Stale.ExecutionEpoch, ep, action),
			map[string]any{
				"error": grant.AuthorizationStale, "reason": "server execution epoch changed",
				"approvedEpoch": d.Stale.ExecutionEpoch, "currentEpoch": ep,
				"retry": "refresh tool metadata and request authorization",
				"tool":  p.Name, "catalogChanged": catalogChanged, "action": action,
			})
	} else {
		line = h.requiredLine(m, p.Name, d, def, action, fields)
	}
	h.audit.event(audit.TypeAuthorizationDenied, ep, h.run, fields)
	return line, nil
}

// requiredLine is the authorization_required error for a call of tool
// refused with d; fields (the audit record) gets the reason.
func (h *Host) requiredLine(m *jsonrpc.Message, tool string, d grant.Decision, def, action string, fields map[string]any) []byte {
	ep := h.child.epoch
	what := "no grant covers this call"
	if d.PerCall {
		what = "credential scope requires an approval for each call"
	}
	data := map[string]any{
		"error": grant.AuthorizationRequired, "tool": tool,
		"currentEpoch": ep, "credentialScope": d.Credentials, "perCall": d.PerCall, "action": action,
	}
	if g := d.Revoked; g != nil {
		what = fmt.Sprintf("grant %s was revoked", g.ID)
		data["revoked"], data["grant"] = true, g.ID
		fields["reason"], fields["grant"] = "grant_revoked", g.ID
		if g.RevokedReason == grant.RevokedPolicyRaised {
			why := h.policy.Outranks(g, h.enrolled)
			if why == "" {
				why = "what it was approved with no longer counts"
			}
			what = fmt.Sprintf("grant %s was revoked when %s raised the approval policy (%s)", g.ID, config.FileName, why)
			data["policyRaised"] = why
			fields["reason"] = grant.RevokedPolicyRaised
		}
	}
	if g := d.Redefined; g != nil {
		what = "the tool's definition changed since approval"
		data["definitionChanged"], data["grant"] = true, g.ID
		data["approvedDefinition"], data["currentDefinition"] = g.Definitions[tool], def
		fields["reason"], fields["grant"] = "definition_changed", g.ID
		action += ", after reviewing what changed"
		data["action"] = action
	}
	data["reason"] = what
	wayOut := "; " + h.wayOutLocked()
	if len(h.floor.weak) > 0 {
		data["policyNotApplied"] = h.weakNoteLocked(h.floor.weak)
		what += "; " + h.weakNoteLocked(h.floor.weak)
		if wayOut == "; "+oneShotWayOut {
			wayOut = "" // the exempt list is what mcpepoch.toml changed, and what is not applied
		}
	}
	if h.floor.missing != "" {
		// Why the strictest policy holds, and what lifts it: no answer
		// the agent could relay to a person does.
		data["policyFloorMissing"] = h.floor.missing
		wayOut += "; policy floor: " + h.floor.missing
	}
	return jsonrpc.ErrorLine(m.ID, CodeAuthorizationRequired,
		fmt.Sprintf("authorization_required: %s (tool %s, execution epoch %s): %s%s", what, tool, ep, action, wayOut), data)
}

// wayOutLocked ends an authorization_required message refused at once:
// for a client that cannot be asked (it declared no elicitation), the way
// a client that connects for one call can still call (oneShotWayOut); for
// one that can, why its call was not held.
func (h *Host) wayOutLocked() string {
	if form, url := h.elicitModesLocked(); !form && !url {
		return oneShotWayOut
	}
	if h.policy.ApprovalWait() <= 0 {
		return "the call was not held for an approval, since grants.approval_wait is 0 in mcpepoch.toml"
	}
	return "the call was not held for an approval, since the server declared no tools to list"
}

// oneShotWayOut ends an authorization_required message to a client that
// cannot be asked (wayOutLocked). A client that
// connects for one call (mcp-inspector --cli) starts a new agent run each
// time, so no approval can reach it, and many such clients show only the
// message: it names the other way, which is the project's own decision
// (README "Configuring an MCP client"). It is not in error.data's action,
// what a person does to approve.
// Once a host has run for the project, exempting a tool weakens the
// policy floor: a person accepts it, which at a terminal takes a running
// host of the project (docs/policy-floor.md), so the message says so.
var oneShotWayOut = "a client that connects for one call cannot wait for an approval: " +
	"to call a tool that way, the project lists it under [grants] exempt in mcpepoch.toml, " +
	"and a person accepts that weakening with " + selfcmd.Cmd("policy accept") + " while a client that stays connected runs a host of the project"

func (h *Host) notePendingLocked(tool string, d grant.Decision, ep epoch.Epoch) {
	for _, p := range h.pending {
		if p.Tool == tool && p.Epoch == ep {
			p.Count++
			p.At, p.Reason = time.Now(), d.Refusal
			return
		}
	}
	h.pending = append(h.pending, &Pending{Tool: tool, Reason: d.Refusal, Epoch: ep,
		Credentials: d.Credentials, PerCall: d.PerCall, At: time.Now(), Count: 1})
}

// saveGrantsLocked writes the grants file; a failure is logged (the grants
// in memory stay authoritative for this host).
func (h *Host) saveGrantsLocked() {
	if err := h.grants.Save(); err != nil {
		h.logf("grants: %v", err)
	}
}

// revokeEpochLocked drops every grant bound to ep (an epoch change,
// identical bytes included) and returns how many.
func (h *Host) revokeEpochLocked(ep epoch.Epoch) int {
	return h.revokeEpochReasonLocked(ep, grant.RevokedEpochChanged)
}

// revokeEpochReasonLocked is revokeEpochLocked with the reason recorded
// (grant.Revoked*).
func (h *Host) revokeEpochReasonLocked(ep epoch.Epoch, reason string) int {
	now := time.Now()
	var ids []epoch.GrantID
	for _, g := range h.grants.Grants {
		if g.ExecutionEpoch == ep && g.RevokedAt == nil {
			ids = append(ids, g.ID)
		}
	}
	h.captureRenewalLocked(ep, now)
	n := h.grants.RevokeEpochFor(ep, reason, now)
	for _, id := range ids {
		h.audit.event(audit.TypeGrantRevoked, ep, h.run, map[string]any{"grant": id, "reason": reason})
	}
	if n > 0 {
		h.saveGrantsLocked()
	}
	h.endAsksOfEpochLocked(ep)
	h.pending = nil
	return n
}

// IdentityLine is one artifact on the review screen.
type IdentityLine = localapi.IdentityLine

// Review is what mcpepoch approve shows a person before they approve.
type Review = localapi.Review

// ApproveRequest is the payload of an "approve" request.
type ApproveRequest = localapi.ApproveRequest

// reviewLocked builds the review screen's data.
func (h *Host) reviewLocked() Review {
	r := Review{AgentRun: h.run, Label: h.opts.Label, State: h.state, Tools: []json.RawMessage{},
		Coverage: h.policy.Review(nil, nil, nil), Pending: h.pending, Grants: h.grants.Live(time.Now()),
		Renewal: h.currentRenewalLocked(), CatalogPending: h.fetching && h.catalog == nil}
	if r.Pending == nil {
		r.Pending = []*Pending{}
	}
	if r.Grants == nil {
		r.Grants = []*grant.Grant{}
	}
	if h.child != nil {
		r.Epoch, r.PID = h.child.epoch, h.child.pid
		var prev map[string]build.Digest
		if h.approved != nil {
			r.ApprovedEpoch = h.approved.epoch
			prev = map[string]build.Digest{}
			for _, a := range h.approved.identity.Artifacts() {
				prev[string(a.Role)+" "+a.Path] = a.Digest
			}
		}
		for _, a := range h.child.identity.Artifacts() {
			l := IdentityLine{Role: a.Role, Path: a.Path, Digest: a.Digest, Missing: a.Missing}
			if prev != nil {
				l.Approved = prev[string(a.Role)+" "+a.Path]
				l.Changed = l.Approved != a.Digest
			}
			r.Identity = append(r.Identity, l)
		}
	}
	if h.catalog != nil {
		r.CatalogRevision, r.Tools = h.catalog.Revision, h.catalog.Tools
		var base []json.RawMessage
		if h.approved != nil {
			base = h.approved.tools
		}
		r.Coverage = h.policy.Review(base, h.catalog.Tools, h.catalog.Names)
	}
	r.Proof = h.policy.Proof(nil, h.enrolled)
	for _, scopes := range r.Credentials {
		for _, c := range scopes {
			// A scope whose list leaves the base list as it is leaves it
			// so in any combination (grant.Policy.Proof folds one scope
			// at a time).
			if p := h.policy.Proof([]string{c}, h.enrolled); !slices.Equal(p, r.Proof) {
				if r.ScopeProof == nil {
					r.ScopeProof = map[string]approval.Proofs{}
				}
				r.ScopeProof[c] = p
			}
		}
	}
	return r
}

// Renewals (localapi.Renewal). A grant ends with its epoch; what the
// person approved does not have to be asked from scratch. When an epoch
// change revokes grants, revokeEpochLocked keeps what they covered (a
// renewalBase); once the new epoch's catalog is known, setCatalogLocked
// prepares the renewal against it (prepareRenewalLocked) by the rules of
// package approval (grants.go: approval.Covered.Offer): the tools whose
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

// renewalForLocked returns the prepared renewal that covers a call of tool
// in epoch ep, when one exists (grants.go): the approval the host then
// asks for through the MCP client (elicit.go) is that renewal as prepared,
// its tools and credential scopes, so that one press approves it and
// releases the call. Only a pre-selected tool counts: a tool whose
// definition changed is included by a person explicitly, never on a
// call's behalf, so its call asks for the tool alone. h.mu is held.
func (h *Host) renewalForLocked(ep epoch.Epoch, tool string) (ApproveRequest, bool) {
	r := h.renewal
	if r == nil || r.Epoch != ep || !slices.Contains(r.Tools, tool) {
		return ApproveRequest{}, false
	}
	return r.Request(nil, ""), true
}
