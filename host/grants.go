package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
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
	action := howToApprove(h.policy.Proof(d.Credentials, h.enrolled))
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
		Renewal: h.currentRenewalLocked()}
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
					r.ScopeProof = map[string]grant.Proofs{}
				}
				r.ScopeProof[c] = p
			}
		}
	}
	return r
}

// proven is how an approval was proven, as the host itself established
// it: never what a request claims.
type proven struct {
	proof   grant.Proof
	channel string // localapi.ChannelTerminal, ChannelScript, "web", "ssh"
	why     string // why it proves no more than proof (refusals, audit)
	// unverified: why the rule behind proof could not be checked (audit).
	unverified string
	// A presence signature: the authenticator's id, its counter, the
	// grant digest signed.
	authenticator string
	signCount     uint32
	digest        string
	// proposal is what was signed, and signature the signature itself
	// when it can be checked again later (an SSHSIG): both go to the
	// audit log, where audit verify checks them as a signed checkpoint.
	proposal  *grant.Proposal
	signature string
}

// approve records an approval asked over the socket for the current
// epoch. peer is who asked, as the socket's peer credentials say (never
// what the request claims); what the approval proves is decided here
// (approverProof) and must count under the project's proof list.
func (h *Host) approve(peer notify.Peer, req ApproveRequest) (*grant.Grant, error) {
	h.mu.Lock()
	server := 0
	if h.child != nil {
		server = h.child.pid
	}
	h.mu.Unlock()
	pr := proven{channel: localapi.ChannelScript}
	if req.Channel == localapi.ChannelTerminal {
		pr.channel = localapi.ChannelTerminal
	}
	pr.proof, pr.why = h.approverProof(peer, req.Channel, server)
	return h.grantFor(peer, req, pr)
}

// grantFor makes the grant of an approval proven as pr, once the request
// matches what runs and pr counts under the proof list of its credential
// scopes; a refusal for lack of proof is audited (approval_refused).
func (h *Host) grantFor(peer notify.Peer, req ApproveRequest, pr proven) (*grant.Grant, error) {
	if req.Expires == "" {
		req.Expires = grant.ExpiresRunEnds
	}
	if err := grant.ParseExpiry(req.Expires); err != nil {
		return nil, err
	}
	if err := h.refuseDriftedEpoch(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	tools, creds, err := h.scopeLocked(req)
	if err != nil {
		return nil, err
	}
	if err := h.checkRenewalLocked(req.Renewal); err != nil {
		return nil, err
	}
	if err := h.checkAttestedLocked(pr); err != nil {
		return nil, err
	}
	if err := h.proofCountsLocked(peer, tools, creds, pr); err != nil {
		return nil, err
	}
	now := time.Now()
	g := &grant.Grant{
		ID: epoch.NewGrantID(now), AgentRun: h.run, ServerLabel: h.opts.Label, ExecutionEpoch: h.child.epoch,
		ToolScope: tools, CredentialScope: creds, IssuedAt: now.UTC(), ExpiresWhen: req.Expires,
		ApprovedBy: userName(peer), CatalogRevision: string(h.catalog.Revision),
		Definitions: h.definitionsLocked(tools),
		Proof:       pr.proof, Channel: pr.channel, Authenticator: pr.authenticator, SignCount: pr.signCount, SignedDigest: pr.digest,
	}
	g.SetExpiry()
	h.grants.Add(g)
	h.saveGrantsLocked()
	h.approved = &snapshot{epoch: h.child.epoch, identity: h.child.identity, tools: h.catalog.Tools}
	h.dropPendingLocked(tools)
	if h.envRelaunchDueLocked(g) {
		// The calls it covers go to the process started with the
		// credential's variable, once it is ready (envdeliver.go).
		go h.relaunchWithEnv(g)
	} else {
		defer h.releaseHeldLocked() // after approval_granted: the calls it covers go now
	}
	fields := map[string]any{
		"grant": g.ID, "tool_scope": g.ToolScope, "credential_scope": listField(g.CredentialScope),
		"expires_when": g.ExpiresWhen, "approved_by": g.ApprovedBy,
		"channel": g.Channel, "proof": string(g.Proof), "authenticator": g.Authenticator,
		"sign_count": strconv.FormatUint(uint64(g.SignCount), 10), "signed_digest": g.SignedDigest,
	}
	if p := pr.proposal; p != nil {
		fields["nonce"], fields["catalog_revision"] = p.Nonce, p.CatalogRevision
		fields["audit_head_seq"], fields["audit_head_hash"] = strconv.FormatInt(p.AuditHead.Seq, 10), p.AuditHead.Hash
		if pr.signature != "" {
			fields["signature"] = pr.signature
		}
	}
	h.settleRenewalLocked(g, req.Renewal, fields)
	if g.Proof == grant.ProofSameUser {
		fields["unverified"] = "no person was proven: " + pr.why
	} else if pr.unverified != "" {
		fields["unverified"] = pr.unverified
	}
	h.audit.event(audit.TypeApprovalGranted, g.ExecutionEpoch, h.run, fields)
	h.logf("epoch %s: %s approved %v (credential scope %v, until %s; proof %s): grant %s", g.ExecutionEpoch, g.ApprovedBy, g.ToolScope, g.CredentialScope, g.ExpiresWhen, g.Proof, g.ID)
	return g, nil
}

// proofCountsLocked reports whether pr counts under the proof list of the
// credential scopes creds; a refusal is audited (approval_refused) and
// says how a person approves instead.
func (h *Host) proofCountsLocked(peer notify.Peer, tools, creds []string, pr proven) error {
	need := h.policy.Proof(creds, h.enrolled)
	if need.Counts(pr.proof) {
		return nil
	}
	h.audit.event(audit.TypeApprovalRefused, h.child.epoch, h.run, map[string]any{
		"tool_scope": tools, "credential_scope": listField(creds), "channel": pr.channel, "proof": string(pr.proof),
		"reason": pr.why, "required_proof": need.String(), "asked_by": userName(peer),
	})
	why := ""
	if pr.why != "" {
		why = " (" + pr.why + ")"
	}
	note := ""
	if w := proofWeakenings(h.floor.weak); len(w) > 0 {
		note = "; " + h.weakNoteLocked(w)
	}
	return fmt.Errorf("this approval proves only %s%s, and this project counts only %s as a person's approval: %s%s",
		pr.proof, why, need, howToApprove(need), note)
}

// definitionsLocked returns the digest of each tool's current definition,
// what the person reviewed (grant.Grant.Definitions).
func (h *Host) definitionsLocked(tools []string) map[string]string {
	out := make(map[string]string, len(tools))
	for _, name := range tools {
		if t, ok := h.tools[name]; ok {
			out[name] = string(t.digest)
		}
	}
	return out
}

// scopeLocked checks that req speaks of what runs (state ready, the
// reviewed epoch and catalog) and returns the tool and credential scopes
// it grants (grant.Policy.Scope).
func (h *Host) scopeLocked(req ApproveRequest) (tools, creds []string, err error) {
	if h.child == nil || h.state != StateReady {
		return nil, nil, fmt.Errorf("the host is %s, not ready: approve again once the server runs", h.state)
	}
	if req.Epoch != h.child.epoch {
		return nil, nil, fmt.Errorf("the execution epoch changed since the review (reviewed %s, running %s): review again", req.Epoch, h.child.epoch)
	}
	if h.catalog == nil {
		return nil, nil, errors.New("the tool catalog is not known yet: wait for the client to list tools, then review again")
	}
	if req.Catalog != "" && req.Catalog != h.catalog.Revision {
		return nil, nil, fmt.Errorf("the server's tool catalog changed since the review (reviewed %s, now %s): review again", build.Digest(req.Catalog).Short(), build.Digest(h.catalog.Revision).Short())
	}
	a := grant.Approval{Tools: req.Tools, All: req.All, Credentials: req.Credentials, Expires: req.Expires}
	return h.policy.Scope(a, h.child.epoch, h.catalog.Names)
}

// dropPendingLocked forgets the refused calls of tools, now approved.
func (h *Host) dropPendingLocked(tools []string) {
	var left []*Pending
	for _, p := range h.pending {
		if !slices.Contains(tools, p.Tool) {
			left = append(left, p)
		}
	}
	h.pending = left
}

// revoke ends one live grant by id.
func (h *Host) revoke(peer notify.Peer, id epoch.GrantID) (*grant.Grant, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.grants.Revoke(id, grant.RevokedByUser, time.Now()) {
		return nil, fmt.Errorf("no live grant %s in agent run %s", id, h.run)
	}
	h.saveGrantsLocked()
	for _, g := range h.grants.Grants {
		if g.ID == id {
			h.audit.event(audit.TypeGrantRevoked, g.ExecutionEpoch, h.run, map[string]any{"grant": id, "reason": grant.RevokedByUser, "revoked_by": userName(peer)})
			return g, nil
		}
	}
	return nil, nil
}

// userName names the OS user with the peer's uid, "uid N" if unknown.
func userName(peer notify.Peer) string {
	if !peer.Checked {
		peer.UID = os.Getuid() // no peer credentials here: the socket's 0600 mode admits only our uid
	}
	uid := strconv.Itoa(peer.UID)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return "uid " + uid
}

// proofWeakenings returns the weakenings of proof lists among weak
// (grants.proof, credentials.NAME.proof): the ones that can explain an
// approval refused for its proof.
func proofWeakenings(weak []trust.Weakening) []trust.Weakening {
	var out []trust.Weakening
	for _, w := range weak {
		if w.Setting == "grants.proof" || strings.HasSuffix(w.Setting, ".proof") {
			out = append(out, w)
		}
	}
	return out
}
