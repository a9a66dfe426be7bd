// Approving and revoking grants: the approve and revoke requests, whose proof the approval package judged, the grant an approval yields.

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
)

// proven is how an approval was proven (approval.Proven, as the channel
// of package approval decided it) and, for a presence signature, the
// proposal that was signed: it goes to the audit log, where audit verify
// checks it as a signed checkpoint.
type proven struct {
	approval.Proven
	proposal *grant.Proposal
}

// proveApprover is the proof check of the approve route (a
// localapi.PermitPerson route, run by the Mux before serveApprove): what
// the sender proves by the terminal channel's rule
// (approval.Launch.Terminal), from the socket's peer credentials (never
// what the request claims; its channel only ever lowers what they prove).
// It reads the process table outside h.mu.
func (h *Host) proveApprover(_ context.Context, peer notify.Peer, req notify.Request) approval.Proven {
	claim, _ := localapi.DecodePayload[ApproveRequest](req.Payload) // unreadable: nobody was asked, and the handler refuses it
	h.mu.Lock()
	server := 0
	if h.child != nil {
		server = h.child.pid
	}
	h.mu.Unlock()
	pid := 0
	if peer.Checked {
		pid = peer.PID
	}
	return h.clients.Terminal(claim.Channel == localapi.ChannelTerminal, pid, server)
}

// approve records an approval asked over the socket for the current
// epoch, by peer (for the record: its OS user), proven as pr (the approve
// route's proof check, proveApprover); pr must count under the project's
// proof list.
func (h *Host) approve(peer notify.Peer, req ApproveRequest, pr approval.Proven) (*grant.Grant, error) {
	return h.grantFor(peer, req, proven{Proven: pr})
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
	if err := h.checkAttestedLocked(pr.Proven); err != nil {
		return nil, err
	}
	if err := h.proofCountsLocked(peer, tools, creds, pr.Proven); err != nil {
		return nil, err
	}
	now := time.Now()
	g := &grant.Grant{
		ID: epoch.NewGrantID(now), AgentRun: h.run, ServerLabel: h.opts.Label, ExecutionEpoch: h.child.epoch,
		ToolScope: tools, CredentialScope: creds, IssuedAt: now.UTC(), ExpiresWhen: req.Expires,
		ApprovedBy: userName(peer), CatalogRevision: string(h.catalog.Revision),
		Definitions: h.definitionsLocked(tools),
		Proof:       pr.Proof, Channel: pr.Channel, Authenticator: pr.Authenticator, SignCount: pr.SignCount, SignedDigest: pr.Digest,
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
		if pr.Signature != "" {
			fields["signature"] = pr.Signature
		}
	}
	h.settleRenewalLocked(g, req.Renewal, fields)
	if g.Proof == approval.ProofSameUser {
		fields["unverified"] = "no person was proven: " + pr.Why
	} else if pr.Unverified != "" {
		fields["unverified"] = pr.Unverified
	}
	if pr.proposal != nil {
		h.audit.checkpoint(audit.TypeApprovalGranted, g.ExecutionEpoch, h.run, fields)
	} else {
		h.audit.event(audit.TypeApprovalGranted, g.ExecutionEpoch, h.run, fields)
	}
	h.logf("epoch %s: %s approved %v (credential scope %v, until %s; proof %s): grant %s", g.ExecutionEpoch, g.ApprovedBy, g.ToolScope, g.CredentialScope, g.ExpiresWhen, g.Proof, g.ID)
	return g, nil
}

// proofCountsLocked reports whether pr counts under the proof list of the
// credential scopes creds (approval.Proven.Shortfall); a refusal is
// audited (approval_refused) and says how a person approves instead.
func (h *Host) proofCountsLocked(peer notify.Peer, tools, creds []string, pr approval.Proven) error {
	need := h.policy.Proof(creds, h.enrolled)
	refusal := pr.Shortfall(need)
	if refusal == "" {
		return nil
	}
	h.audit.event(audit.TypeApprovalRefused, h.child.epoch, h.run, map[string]any{
		"tool_scope": tools, "credential_scope": listField(creds), "channel": pr.Channel, "proof": string(pr.Proof),
		"reason": pr.Why, "required_proof": need.String(), "asked_by": userName(peer),
	})
	if w := proofWeakenings(h.floor.weak); len(w) > 0 {
		refusal += "; " + h.weakNoteLocked(w)
	}
	return errors.New(refusal)
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

// revoke ends one live grant by id, for the socket's peer.
func (h *Host) revoke(peer notify.Peer, id epoch.GrantID) (*grant.Grant, error) {
	return h.revokeBy(id, userName(peer), "socket")
}

// revokeBy ends one live grant by id, a person's revoke that came through
// via ("socket", or "request_file": revokefile.go) from the OS user by.
func (h *Host) revokeBy(id epoch.GrantID, by, via string) (*grant.Grant, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.grants.Revoke(id, grant.RevokedByUser, time.Now()) {
		return nil, fmt.Errorf("no live grant %s in agent run %s", id, h.run)
	}
	h.saveGrantsLocked()
	for _, g := range h.grants.Grants {
		if g.ID == id {
			h.audit.event(audit.TypeGrantRevoked, g.ExecutionEpoch, h.run, map[string]any{"grant": id, "reason": grant.RevokedByUser, "revoked_by": by, "via": via})
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
	return uidName(peer.UID)
}

// uidName names the OS user with uid, "uid N" if unknown.
func uidName(n int) string {
	uid := strconv.Itoa(n)
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
