package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// Identity drift. A running epoch is the code its identity names; a
// server that loads code after the host's checks (an import on the first
// call, a require in a handler, an interpreter that reads a saved file)
// runs what is on disk then. So once the tree watcher says a tree changed,
// or any identity check (status, approve, a grant) finds that the running
// epoch's hashed inputs differ from what it started with, the epoch has
// drifted: the host logs and audits it (identity_drift, with what
// changed), revokes the epoch's grants (reason identity_drift; what they
// covered is offered as a renewal once a new epoch runs), and refuses
// every call that needs a grant, approvals of that epoch included, until
// a build or mcpepoch restart starts a new epoch. Exempt tools still run:
// the project said they need no person. A build writes its files before
// its hook signals, so an epoch a build replaces often drifts first: the
// grants end either way, and a call in between never runs the new code
// under the old approval.

// driftSettle is how long the host waits after a change notification for
// more of them (an editor's save, a build writing many files) before it
// computes the identity again.
const driftSettle = 200 * time.Millisecond

// watchDrift checks the running epoch's identity after every change the
// tree watcher signals, until ctx is done.
func (h *Host) watchDrift(ctx context.Context) {
	changes := h.trees.Changes()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
		settle := time.NewTimer(driftSettle)
	settling:
		for {
			select {
			case <-ctx.Done():
				settle.Stop()
				return
			case <-changes:
				settle.Reset(driftSettle)
			case <-settle.C:
				break settling
			}
		}
		h.mu.Lock()
		c := h.child
		h.mu.Unlock()
		if c != nil {
			h.codeDrift(c, nil)
		}
	}
}

// noteDriftLocked marks child c's epoch drifted with changed
// (build.Changes), once: it logs, audits identity_drift and revokes the
// epoch's grants. A child that is no longer current is left alone: its
// replacement ended its grants already.
func (h *Host) noteDriftLocked(c *child, changed []string) {
	if c != h.child || c.drift != nil {
		return
	}
	c.drift = changed
	live := 0
	for _, g := range h.grants.Grants {
		if g.ExecutionEpoch == c.epoch && g.RevokedAt == nil {
			live++
		}
	}
	h.audit.event(audit.TypeIdentityDrift, c.epoch, h.run, map[string]any{
		"changed": changed, "grants_revoked": fmt.Sprint(live)})
	revoked := h.revokeEpochReasonLocked(c.epoch, grant.RevokedIdentityDrift)
	c.driftRevoked = revoked
	what, note := h.newCodeLocked()
	h.logf("epoch %s: %s changed on disk while it runs and no build restarted it: its grants are revoked (%d) and calls that need one are refused until %s%s",
		c.epoch, strings.Join(changed, ", "), revoked, what, note)
}

// driftRefusalLocked is the refusal of a tools/call that needs a grant
// while the running epoch has drifted, nil when it has not.
func (h *Host) driftRefusalLocked(m *jsonrpc.Message, tool string) []byte {
	c := h.child
	if c == nil || c.drift == nil {
		return nil
	}
	h.audit.event(audit.TypeAuthorizationDenied, c.epoch, h.run, map[string]any{
		"reason": grant.RevokedIdentityDrift, audit.FieldTool: tool, "current_epoch": string(c.epoch)})
	what, note := h.newCodeLocked()
	return jsonrpc.ErrorLine(m.ID, CodeAuthorizationStale,
		fmt.Sprintf("authorization_stale: identity_drift: %s changed on disk since execution epoch %s started; its grants were revoked and it cannot be approved: %s, which can%s",
			strings.Join(c.drift, ", "), c.epoch, what, note),
		map[string]any{
			"error": grant.AuthorizationStale, "reason": grant.RevokedIdentityDrift,
			"changed": c.drift, "currentEpoch": c.epoch, "tool": tool,
			"retry": "rebuild (" + selfcmd.Name() + " record) or " + selfcmd.Name() + " restart, then request authorization",
		})
}

// newCodeLocked says what starts an epoch on the code on disk: a build
// (mcpepoch record) or mcpepoch restart; after a failed build, only a
// build that succeeds, since a restart would start the code that failed
// (then note says so, else it is "").
func (h *Host) newCodeLocked() (what, note string) {
	if h.buildFailed {
		return "a build that succeeds starts an epoch on the new code",
			" (the last build failed: " + selfcmd.Name() + " restart would start the code that failed to build)"
	}
	return "a build (" + selfcmd.Name() + " record) or " + selfcmd.Name() + " restart starts an epoch on the new code", ""
}
