package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
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

// A change is not waited out. The first notification of a change under a
// hashed tree makes the running epoch "identity unverified" at once: its
// identity was computed before the change (child.verified is the tree
// watcher's Generation then), so the code on disk may no longer be the
// code it names. A call that needs a grant and has one is then held, not
// forwarded (holdUnverifiedLocked), until the identity is computed again:
// drifted, the call is refused authorization_stale (identity_drift) as
// every later one is; unchanged, it is forwarded. The host waits for a
// burst of changes to settle (driftSettle after the last one) before it
// computes, but never longer than driftSettleMax after the first, so no
// stream of events, a file rewritten every 50 ms or a build writing for
// seconds, can postpone the decision; a call held longer than
// verifyHoldMax (changes keep coming and keep the identity unverified) is
// refused authorization_stale (identity_unverified) and did not run.
// Exempt tools are not held. Generation syncs with the kernel's queue, so
// a write that returned before the call arrived is always seen, at the
// cost of one read(2) per granted call when nothing changed. Where the
// host has no notifications (macOS, a tree walked at every build: see
// treewatch), no change is seen between identity checks.

// driftSettle is how long the host waits after a change notification for
// more of them (an editor's save, a build writing many files) before it
// computes the identity again.
const driftSettle = 200 * time.Millisecond

// driftSettleMax caps the wait of driftSettle from the first notification
// of a burst: no stream of notifications extends it.
const driftSettleMax = time.Second

// verifyHoldMax bounds how long a granted call is held while the running
// epoch's identity is unverified.
const verifyHoldMax = 5 * time.Second

// verifyWait is a granted tools/call held while its epoch's identity is
// unverified.
type verifyWait struct {
	m     *jsonrpc.Message
	line  []byte
	since time.Time
}

// watchDrift checks the running epoch's identity after every change the
// tree watcher signals, and when a held call asks for it (h.verifyKick),
// until ctx is done.
func (h *Host) watchDrift(ctx context.Context) {
	changes := h.trees.Changes()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-h.verifyKick:
		}
		settle := time.NewTimer(driftSettle)
		bound := time.NewTimer(driftSettleMax)
	settling:
		for {
			select {
			case <-ctx.Done():
				settle.Stop()
				bound.Stop()
				return
			case <-changes:
				settle.Reset(driftSettle)
			case <-settle.C:
				break settling
			case <-bound.C:
				break settling
			}
		}
		settle.Stop()
		bound.Stop()
		h.verify()
	}
}

// verify computes the running epoch's identity again: when it changed,
// the epoch has drifted (codeDrift); when not, the epoch is verified up to
// the tree watcher's generation read before the computation. Either way
// the calls held for it are decided (releaseVerifiedLocked).
func (h *Host) verify() {
	h.mu.Lock()
	c := h.child
	h.mu.Unlock()
	if c == nil {
		return
	}
	now, gen, err := h.identityAt()
	if err != nil {
		h.logf("epoch %s: computing the identity after a change: %v: calls that need a grant wait for the next change, at most %s", c.epoch, err, verifyHoldMax)
		h.mu.Lock()
		h.verifyErr = err
		h.mu.Unlock()
		return
	}
	if changed := build.Changes(c.identity, now); len(changed) > 0 {
		h.codeDrift(c, now)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.verifyErr = nil
	if h.child == c && c.drift == nil && gen > c.verified {
		c.verified = gen
	}
	h.releaseVerifiedLocked()
}

// unverifiedLocked reports whether the current child's identity is
// unverified: the tree watcher counted a change since the identity that
// vouches for it was computed. h.mu is held.
func (h *Host) unverifiedLocked() bool {
	return h.child != nil && h.trees.Generation() != h.child.verified
}

// holdUnverifiedLocked holds the granted tools/call m (line as received)
// while the current epoch's identity is unverified, and asks watchDrift
// to compute it. The first hold of a burst is logged. h.mu is held.
func (h *Host) holdUnverifiedLocked(m *jsonrpc.Message, line []byte) {
	if len(h.verifying) == 0 {
		h.logf("epoch %s: a watched tree may have changed (a file event, or the mount table): the identity is unverified, and calls that need a grant wait (at most %s) until it is computed again", h.child.epoch, verifyHoldMax)
		time.AfterFunc(verifyHoldMax, h.expireVerifying)
	}
	h.verifying = append(h.verifying, &verifyWait{m: m, line: line, since: time.Now()})
	select {
	case h.verifyKick <- struct{}{}:
	default:
	}
}

// releaseVerifiedLocked decides the held calls once nothing keeps the
// identity unverified: the epoch drifted (each is then refused), it was
// replaced or ended (each goes the way of a call that arrives now: held
// for the restart, then refused as stale, or refused while the server is
// down), or it is verified (each is forwarded, its grant checked again).
// While changes keep it unverified they stay, up to verifyHoldMax. h.mu
// is held.
func (h *Host) releaseVerifiedLocked() {
	if len(h.verifying) == 0 || h.state == StateReady && h.child != nil && h.child.drift == nil && h.unverifiedLocked() {
		return
	}
	held := h.verifying
	h.verifying = nil
	for _, w := range held {
		h.dispatchLocked(w.m, w.line)
	}
}

// expireVerifying refuses the held calls that waited verifyHoldMax, and
// waits again for the oldest left.
func (h *Host) expireVerifying() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var left []*verifyWait
	for _, w := range h.verifying {
		if time.Since(w.since) < verifyHoldMax {
			left = append(left, w)
			continue
		}
		h.toClient(h.unverifiedRefusalLocked(w.m))
	}
	h.verifying = left
	if len(left) > 0 {
		time.AfterFunc(verifyHoldMax-time.Since(left[0].since), h.expireVerifying)
	}
}

// unverifiedRefusalLocked is the refusal of a granted tools/call held
// verifyHoldMax while files under the hashed trees kept changing. h.mu is
// held.
func (h *Host) unverifiedRefusalLocked(m *jsonrpc.Message) []byte {
	ep := epoch.Epoch("")
	if h.child != nil {
		ep = h.child.epoch
	}
	h.audit.event(audit.TypeAuthorizationDenied, ep, h.run, map[string]any{
		"reason": reasonIdentityUnverified, audit.FieldTool: m.Tool, "current_epoch": string(ep)})
	why := fmt.Sprintf("files under the code execution epoch %s was hashed from kept changing for %s, so the code on disk could not be checked against it; the call did not run: retry once the files are quiet (a build, "+selfcmd.Name()+" record, ends the wait)", ep, verifyHoldMax)
	if h.verifyErr != nil {
		why = fmt.Sprintf("after a change under the code execution epoch %s was hashed from, its identity could not be computed again (%v), so the code on disk could not be checked against it; the call did not run: fix that, or rebuild ("+selfcmd.Name()+" record)", ep, h.verifyErr)
	}
	return jsonrpc.ErrorLine(m.ID, CodeAuthorizationStale, "authorization_stale: identity_unverified: "+why,
		map[string]any{
			"error": grant.AuthorizationStale, "reason": reasonIdentityUnverified,
			"currentEpoch": ep, "tool": m.Tool,
			"retry": "retry once the files are quiet, or rebuild (" + selfcmd.Name() + " record)",
		})
}

// reasonIdentityUnverified is the reason of a call refused because the
// epoch's identity could not be verified in time (verifyHoldMax).
const reasonIdentityUnverified = "identity_unverified"

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
