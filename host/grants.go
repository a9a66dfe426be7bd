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
const oneShotWayOut = "a client that connects for one call cannot wait for an approval: " +
	"to call a tool that way, the project lists it under [grants] exempt in mcpepoch.toml"

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
			l := IdentityLine{Role: a.Role, Path: a.Path, Digest: a.Digest}
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
