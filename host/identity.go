package host

import (
	"context"
	"sync"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"

	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// The host keeps the code and dependency trees of its server's identity
// current from file-system notifications (h.trees, package treewatch):
// identity() walks only a tree a notification marked changed, so a build
// signal is answered without walking what nothing touched. The hook asks
// for the same trees before it hashes a build (serveTrees), so that it
// does not walk them either. Nothing the hook says enters the host's
// identity, and neither does the hook's on-disk stat cache: the host's
// caches live in its memory (spec).

// identity computes what the launch command will run now.
func (h *Host) identity() (*build.Identity, error) {
	spec := h.spec()
	if !spec.Rehash {
		spec.Trees = h.trees.Synced() // one wait for the kernel's queue, however many trees
	}
	id, err := build.Compute(spec)
	if err == nil && id.Runtime.Version != "" {
		h.versions.Store(id.Runtime.Digest, id.Runtime.Version)
	}
	return id, err
}

// identityAt is identity with the tree watcher's Generation read before
// it: a later Generation that differs says a tree changed since the
// identity was computed (unverifiedLocked).
func (h *Host) identityAt() (*build.Identity, uint64, error) {
	gen := h.trees.Generation()
	id, err := h.identity()
	return id, gen, err
}

// identityAhead starts computing the identity on a goroutine of its own,
// at once, and returns the wait for its result, which may be called again:
// a build signal's identity is hashed while the signal is recorded and
// mcpepoch.toml re-read (onBuild), which need no part of it. Files the
// build wrote are in place before its signal is sent, so the identity is
// of the build signalled.
func (h *Host) identityAhead() func() (*build.Identity, error) {
	type result struct {
		id  *build.Identity
		err error
	}
	ch := make(chan result, 1)
	go func() {
		id, err := h.identity()
		ch <- result{id, err}
	}()
	return sync.OnceValues(func() (*build.Identity, error) {
		r := <-ch
		return r.id, r.err
	})
}

// spec is the identity's build.Spec, with the runtime versions the host
// has seen (a restart does not run node --version again) and the host's
// own in-memory stat caches instead of the on-disk ones: a digest the
// host uses comes from content it read itself, never from a cache file
// another process of the user could have forged (build.Caches).
func (h *Host) spec() build.Spec {
	spec := h.opts.Spec
	spec.CacheDir, spec.Caches = "", h.caches
	spec.Versions = func(d build.Digest) (string, bool) {
		v, ok := h.versions.Load(d)
		if !ok {
			return "", false
		}
		return v.(string), true
	}
	return spec
}

// serveTrees answers the hook's trees request with the trees of the
// identity the host keeps current, as they are now: from the watcher's
// memory when every one is current, else through the identity's inputs,
// walking a watched tree a notification named. A tree the host walks at
// every build (not watched) is left out, and so is every tree of a host
// that keeps none current: the hook walks them itself rather than wait
// for the host to walk them.
func (h *Host) serveTrees(context.Context, notify.Peer, notify.Request) notify.Response {
	out := localapi.Trees{Trees: []localapi.Tree{}}
	if h.opts.Spec.Rehash || !h.trees.Watching() {
		return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
	}
	if known, ok := h.trees.Current(); ok {
		for _, k := range known {
			out.Trees = append(out.Trees, localapi.TreeOf(k.Root, k.Opt, k.Tree))
		}
		return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
	}
	// Compute names the trees; only watched ones are digested and told.
	spec := h.spec()
	digest := h.trees.Synced()
	spec.Trees = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
		if !h.trees.Watched(root, opt) {
			return build.Tree{}, nil // not told: left to the hook
		}
		t, err := digest(root, opt, walk)
		if err == nil {
			out.Trees = append(out.Trees, localapi.TreeOf(root, opt, t))
		}
		return t, err
	}
	if _, err := build.Compute(spec); err != nil {
		return h.fail(notify.CodeInternal, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
}

// What runs must be what was hashed. The host computes a launch's identity
// before it starts the server, and the server loads its code after that:
// a file swapped in between runs under an epoch whose identity names the
// old bytes. So the host computes the identity again once the new server
// has answered initialize and listed its tools, before the epoch is made
// ready, before a held call reaches it and before a grant of it is used
// (restart). With the tree watcher this costs no walk unless a
// notification named a path in a tree since. When the identity differs,
// that epoch is not used: its grants are revoked, the audit log records
// the replacement (server_replaced, reason "identity changed while the
// server started"), and the server is started again under a new epoch, at
// most maxLaunchRaces times in a row; then the host is down. A swap put
// back before the check leaves the digests as they were: so the check
// also compares the device, inode and ctime of every hashed file with what
// they were when the launch's identity was computed (build.Touched), and
// a file replaced or rewritten in between is a change too. The first
// epoch of a session is checked the same way before its first catalog is
// set (firstLaunchCheck).

// maxLaunchRaces bounds the launches of one restart whose identity changed
// while they started.
const maxLaunchRaces = 3

// checkLaunch refuses, at host start, a launch whose identity cannot
// vouch for what it runs: one that hashes no file of the project
// (build.UncoveredError: an edit of its code would change no epoch), or
// one that reaches a self-reloading tool through a wrapper (a
// package.json script "node --watch server.mjs" or "tsc && node --watch
// dist/server.js", any command of a shell script, followed or not:
// build.Identity.Runs and Scripted), as checkSelfReload refuses it on the
// command line itself.
func (h *Host) checkLaunch(id *build.Identity) error {
	if err := id.Uncovered(); err != nil {
		return err
	}
	if h.opts.AllowSelfReload {
		return nil
	}
	for _, words := range append(slices.Clip(id.Runs), id.Scripted...) {
		if err := checkSelfReload(words); err != nil {
			var sr *SelfReloadError
			if errors.As(err, &sr) {
				sr.Via = h.opts.Command
			}
			return err
		}
	}
	return nil
}

// launchCheck computes the identity again after child c, launched with
// identity want, came up, and returns it with what differs from want
// (build.Changes, then what was replaced or rewritten with the same
// content, build.Touched, marked so; empty when nothing did). When
// nothing did, c is verified up to the tree watcher's generation read
// before (identity.go).
func (h *Host) launchCheck(c *child, want *build.Identity) (*build.Identity, []string, error) {
	now, gen, err := h.identityAt()
	if err != nil {
		return nil, nil, fmt.Errorf("epoch %s: computing the identity again after the server started: %w", c.epoch, err)
	}
	changed := build.Changes(want, now)
	for _, p := range build.Touched(want, now) {
		changed = append(changed, p+" (replaced or rewritten while the server started)")
	}
	if len(changed) == 0 {
		h.mu.Lock()
		c.verified = gen
		h.mu.Unlock()
	}
	return now, changed, nil
}

// startFirstCheck starts the launch check of the session's first epoch c
// (firstLaunchCheck), once: from its first message (observeOnce), so that
// it runs while the client initializes, or from its first catalog, which
// waits for its answer (fetchFirstCatalogLocked).
func (h *Host) startFirstCheck(c *child) {
	c.firstOnce.Do(func() {
		go func() { c.firstDone <- h.firstLaunchCheck(c) }()
	})
}

// firstLaunchCheck is launchCheck for the session's first epoch c, which
// starts ready: it runs once, before its first catalog is set
// (fetchFirstCatalogLocked), and returns why c cannot be used (what
// changed, in words), "" when it can.
func (h *Host) firstLaunchCheck(c *child) string {
	_, changed, err := h.launchCheck(c, c.identity)
	switch {
	case err != nil:
		return err.Error()
	case len(changed) > 0:
		h.logf("epoch %s: %v changed while pid %d started, after its identity was computed: the epoch is not used; starting again under a new epoch", c.epoch, changed, c.pid)
		return "identity changed while the server started (" + strings.Join(changed, ", ") + ")"
	}
	return ""
}

// credentialRecheck computes the identity again right before a
// deliver = "env" relaunch of old's epoch starts its process: when it
// differs from what a person approved (next, old's identity), the grants
// of that epoch are stale. They are revoked, the launch gets a new epoch
// (*ep) whose process no grant names, so it starts without the variable,
// and the audit log records the replacement. It returns the identity to
// launch.
func (h *Host) credentialRecheck(old *child, next *build.Identity, ep *epoch.Epoch) (*build.Identity, error) {
	now, err := h.identity()
	if err != nil {
		return nil, err
	}
	changed := build.Changes(next, now)
	if len(changed) == 0 {
		return next, nil
	}
	*ep = epoch.New(time.Now())
	h.mu.Lock()
	revoked := h.revokeEpochLocked(old.epoch)
	h.audit.event(audit.TypeServerReplaced, *ep, h.run, map[string]any{
		audit.FieldPrevEpoch: string(old.epoch), "changed": changed,
		"reason":         "identity changed before the approved credential was delivered (" + strings.Join(changed, ", ") + "): started without it under a new epoch",
		"grants_revoked": fmt.Sprint(revoked)})
	h.mu.Unlock()
	h.logf("epoch %s: %v changed since the approval: the credential is not delivered; starting under a new epoch %s, which needs its own approval", old.epoch, changed, *ep)
	return now, nil
}

// catalogRevisionLocked returns the revision of the catalog the host
// holds, empty when none.
func (h *Host) catalogRevisionLocked() Revision {
	if h.catalog == nil {
		return ""
	}
	return h.catalog.Revision
}

// codeDrift computes the identity again and says, in words, how it differs
// from child c's, the one its epoch started with (nil when it does not, or
// cannot be computed). A change the tree watcher saw while the epoch runs
// and no build signal followed shows here: status reports it as drift, the
// epoch is marked drifted (identity.go: audited, its grants revoked), and
// a grant for that epoch is refused (grantFor), so that a deliver = "env"
// variable never reaches code the identity does not name. now, when not
// nil, is an identity the host computed itself a moment ago, used instead
// of computing it again. h.mu must not be held.
func (h *Host) codeDrift(c *child, now *build.Identity) []string {
	if now == nil {
		var err error
		if now, err = h.identity(); err != nil {
			return nil
		}
	}
	changed := build.Changes(c.identity, now)
	if len(changed) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteDriftLocked(c, changed)
	line := "running ≠ built: " + strings.Join(changed, ", ") + " changed on disk since epoch " + string(c.epoch) + " started, and no build restarted it"
	if c.driftRevoked > 0 {
		line += fmt.Sprintf("; its %s revoked because the code on disk is not the code that runs", grantsWere(c.driftRevoked))
	}
	if h.buildFailed {
		return []string{line + ": the last build failed, so fix the code: a build that succeeds starts an epoch on the new code, then approve the renewal (" +
			selfcmd.Name() + " approve); " + selfcmd.Name() + " restart would start the code that failed to build"}
	}
	what, _ := h.newCodeLocked()
	return []string{line + ": " + what}
}

// refuseDriftedEpoch returns an error when the running epoch's code
// changed on disk since it started (codeDrift): a person approving it
// would approve code that is not what its identity names.
func (h *Host) refuseDriftedEpoch() error {
	h.mu.Lock()
	c := h.child
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	if d := h.codeDrift(c, nil); d != nil {
		return fmt.Errorf("epoch %s is not approved: %s", c.epoch, strings.TrimPrefix(d[0], "running ≠ built: "))
	}
	return nil
}

// grantsWere is "1 grant was" or "N grants were".
func grantsWere(n int) string {
	if n == 1 {
		return "1 grant was"
	}
	return fmt.Sprintf("%d grants were", n)
}

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
			if h.trees.Unwatched() {
				// A call waits for trees no notification vouches
				// for: hash them now, there is nothing to settle.
				h.verify()
				continue
			}
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
	began := time.Now()
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
	if h.child == c && c.drift == nil {
		h.verifiedAt = began
	}
	h.releaseVerifiedLocked()
}

// needsVerifyLocked reports whether the granted tools/call m must wait for
// the identity to be computed again before it is forwarded: a change was
// counted since the identity that vouches for the epoch (unverifiedLocked),
// or a tree is one no notification vouches for (treewatch's Unwatched: a
// link out of it, a file with other names, no notifications on this
// platform), which is then hashed again for every granted call, unless
// that computation just released m. h.mu is held.
func (h *Host) needsVerifyLocked(m *jsonrpc.Message) bool {
	if k := jsonrpc.IDKey(m.ID); h.passVerified[k] {
		delete(h.passVerified, k)
		return false
	}
	return h.unverifiedLocked() || h.trees.Unwatched()
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
		if h.unverifiedLocked() { // else a tree no notification vouches for: treewatch said so once
			h.logf("epoch %s: a watched tree may have changed (a file event, or the mount table): the identity is unverified, and calls that need a grant wait (at most %s) until it is computed again", h.child.epoch, verifyHoldMax)
		}
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
	running := h.state == StateReady && h.child != nil && h.child.drift == nil
	if len(h.verifying) == 0 || running && h.unverifiedLocked() {
		return
	}
	held := h.verifying
	h.verifying = nil
	for _, w := range held {
		if running && h.trees.Unwatched() {
			if w.since.After(h.verifiedAt) {
				// Held after the last computation began: the next
				// one vouches for it.
				h.verifying = append(h.verifying, w)
				continue
			}
			if h.passVerified == nil {
				h.passVerified = map[string]bool{}
			}
			h.passVerified[jsonrpc.IDKey(w.m.ID)] = true
		}
		h.dispatchLocked(w.m, w.line)
	}
	if len(h.verifying) > 0 {
		select {
		case h.verifyKick <- struct{}{}:
		default:
		}
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
		fmt.Sprintf("authorization_stale: identity_drift: %s changed on disk since execution epoch %s started; its grants were revoked and it cannot be approved: %s, and that epoch can be approved%s",
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
