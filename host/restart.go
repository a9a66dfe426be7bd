package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"

	"encoding/json"
	"slices"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// restartOutcome is what a build signal or restart request led to.
type restartOutcome struct {
	// Outcome is one of localapi's five: restarted (a new child runs under
	// NewEpoch), unchanged, held (ModeManual: new code found, nothing
	// restarted), closed (ModeClose: the server was stopped and the
	// connection is closing); a failed restart is an error, not a value.
	Outcome  localapi.Outcome
	OldEpoch epoch.Epoch
	NewEpoch epoch.Epoch // the running epoch when nothing restarted
	OldPID   int
	NewPID   int
	Changed  []string // what differed, as build.Changes reports it
	// GrantsRevoked counts the grants of the old epoch the restart revoked.
	GrantsRevoked int

	catalogBefore Revision // the catalog revision before the replacement
	// identity is the host's own identity computed for this restart when
	// nothing was replaced: what runs is told from it (outcome's drift)
	// without computing it again a moment later.
	identity *build.Identity
	// manifest is the run manifest read for the build signal this restart
	// answers (buildFields), which drift compares with instead of reading
	// and decoding it again; nil: read it.
	manifest *manifest.File
}

// trigger says why restart runs.
type trigger int

const (
	restartSignal     trigger = iota // a build signal: restart if identity changed, per Mode
	restartManual                    // mcpepoch restart: always a new epoch
	restartCrash                     // the child exited on its own
	restartIdle                      // a request after the child's exit 0 (an idle exit)
	restartCredential                // a deliver = "env" scope approved: same epoch, started again with it (envdeliver.go)
	restartRaced                     // the code changed while the new child started: a new epoch (identity.go)
)

// reasonCredentialRelaunch is the reason of the requests a
// restartCredential answers.
const reasonCredentialRelaunch = "credential_relaunch"

// errShuttingDown refuses a restart once the host is ending.
var errShuttingDown = errors.New("the host is shutting down")

// closeDelay is how long a host in restart mode close outlives the epoch
// it ends, so that its answer reaches the build hook.
const closeDelay = 300 * time.Millisecond

// ErrClosed is the cause Run returns with when the host closed the
// connection on purpose (ModeClose).
var ErrClosed = errors.New("execution epoch changed: connection closed so the client reconnects and initializes again")

// restart recomputes the identity of the launch command and, if it differs
// from the running epoch's (or no child runs, or a restart was asked for),
// replaces the child under a new epoch, one phase per state of the
// package doc:
//
//	identityPendingLocked: requests held; its grants revoked
//	drainOld: the old child's answers to requests in flight passed on
//	  for up to Options.Drain, the rest answered with server_restarted
//	  (held until list_changed; restart.go)
//	stopOld: old process group stopped and reaped (restart mode close
//	  ends here; with Options.DrainDuring, drain and stop run beside
//	  the new child's start)
//	startPending: new child started; the client's initialize replayed
//	  under a private id (legacy era) or its subscriptions/listen re-sent
//	  (2026-07-28)
//	catalogReady: tools/list fetched, catalog revision computed
//	readyLocked: notifications/tools/list_changed sent, then the
//	  server_restarted errors, then held requests released in order,
//	  each checked against the new catalog (unless another restart is
//	  queued: they wait for the epoch it leaves running)
//
// Restarts are serialized by restartMu; signals that arrive during one
// recompute afterwards, so a burst ends with one child on the last build.
func (h *Host) restart(ctx context.Context, why string, t trigger) (restartOutcome, error) {
	return h.restartFrom(ctx, why, t, nil)
}

// restartFrom is restart with ahead, when not nil, the wait for the
// identity computed since the build signal arrived (identityAhead), while
// the signal was recorded. It stands for the identity only when no
// restart holds restartMu by then: a signal that comes during one
// recomputes after it, as restart says.
//
// Every restart but a credential relaunch (the same epoch) reads the
// project's config first, under restartMu (rereadConfig): whatever starts
// a new epoch (a build signal, mcpepoch restart, crash recovery, an idle
// wake, a change seen while down, an in-process reload), a floor a person
// accepted since and mcpepoch.toml are read the one way, so that what
// waits for the next epoch is in force in it, and a build signal that
// replaces nothing still reads them. Grants a stricter policy revoked
// count in the outcome's GrantsRevoked.
func (h *Host) restartFrom(ctx context.Context, why string, t trigger, ahead func() (*build.Identity, error)) (restartOutcome, error) {
	h.mu.Lock()
	h.preemptRefreshLocked() // a re-list waiting on a silent server must not hold this back
	h.restartsQueued++       // a restart under way leaves its held calls for this one (restart.go)
	h.mu.Unlock()
	if !h.restartMu.TryLock() {
		ahead = nil
		h.infof("%s: queued behind the restart under way", why)
		h.restartMu.Lock()
	}
	h.mu.Lock()
	h.restartsQueued--
	h.mu.Unlock()
	defer h.restartMu.Unlock()
	defer func() {
		h.mu.Lock()
		h.resumeRefreshLocked()
		h.finishDeferredLocked()
		if h.readyAfter == nil {
			h.releaseAbortsLocked() // ready released them, or the restart failed
		}
		h.mu.Unlock()
	}()
	if h.ctx.Err() != nil {
		return restartOutcome{}, errShuttingDown // stopChild ran or is waiting to: no new child
	}
	raised := 0
	if t != restartCredential {
		raised = h.rereadConfig()
	}
	out, err := h.restartLocked(ctx, why, t, ahead)
	out.GrantsRevoked += raised
	if err != nil {
		err = h.afterFailedStart(t, err)
	}
	return out, err
}

// restartLocked is restartFrom under restartMu.
func (h *Host) restartLocked(ctx context.Context, why string, t trigger, ahead func() (*build.Identity, error)) (restartOutcome, error) {
	if ahead == nil {
		ahead = h.identity
	}
	next, err := ahead()
	if err != nil {
		return restartOutcome{}, err
	}
	var total restartOutcome
	for attempt := 1; ; attempt++ {
		out, c, err := h.replace(ctx, next, why, t)
		if attempt == 1 {
			total = out
		} else {
			total.Outcome, total.NewEpoch, total.NewPID = out.Outcome, out.NewEpoch, out.NewPID
			total.GrantsRevoked += out.GrantsRevoked
		}
		if err != nil || c == nil {
			if c == nil {
				total.identity = next
			}
			return total, err
		}
		// What runs must be what was hashed: a file swapped in after the
		// identity was computed, and loaded by the server while it
		// started, shows here (identity.go).
		now, changed, err := h.launchCheck(c, next)
		if err != nil {
			return total, h.failStart(c, err)
		}
		if len(changed) == 0 {
			h.mu.Lock()
			defer h.mu.Unlock()
			announce := t != restartCredential || h.catalogRevisionLocked() != out.catalogBefore
			if h.child == c && h.deferReadyLocked(c, announce) {
				return total, nil
			}
			if err := h.readyLocked(c, announce); err != nil {
				return total, &startError{err: err, c: c}
			}
			return total, nil
		}
		if attempt >= maxLaunchRaces {
			return total, h.failStart(c, fmt.Errorf("the server's code changed while each of %d launches started (%v): not used; the host is down until the next build or "+selfcmd.Name()+" restart (a server that writes into the files its identity hashes cannot be vouched for: name its code in code = [...], or a file its command line names that it writes (a database) in data = [...], in "+config.FileName+")", attempt, changed))
		}
		h.logf("epoch %s: %v changed while pid %d started, after its identity was computed: the epoch is not used; starting again under a new epoch", c.epoch, changed, c.pid)
		next, why, t = now, "identity changed while the server started ("+strings.Join(changed, ", ")+")", restartRaced
	}
}

// replace runs one replacement of a restart with identity next: when
// decideLocked replaces the running child, the new child c, started and
// with its catalog, still identity-pending; else c is nil and out the
// answer.
func (h *Host) replace(ctx context.Context, next *build.Identity, why string, t trigger) (out restartOutcome, c *child, err error) {
	h.mu.Lock()
	old := h.child
	out, replace := h.decideLocked(old, next, why, t)
	if !replace {
		h.mu.Unlock()
		return out, nil, nil
	}
	out.catalogBefore = h.catalogRevisionLocked()
	closing := t == restartSignal && h.opts.Mode == ModeClose
	newEpoch := epoch.New(time.Now())
	if t == restartCredential {
		newEpoch = old.epoch // decideLocked checked that old runs the same identity
	}
	h.identityPendingLocked(old, newEpoch, why, t, closing, &out)
	h.mu.Unlock()

	if old != nil {
		reason := "epoch_changed"
		if t == restartCredential {
			reason = reasonCredentialRelaunch
		}
		if h.opts.DrainDuring && !closing && t != restartCredential {
			// host.drain_start = "during": the old server drains and
			// stops beside the new one (restart.go).
			go func() {
				h.drainOld(old, reason, newEpoch)
				h.stopOld(old, why, t, false, out)
			}()
		} else {
			h.drainOld(old, reason, newEpoch)
			if h.stopOld(old, why, t, closing, out) {
				return restartOutcome{Outcome: localapi.OutcomeClosed, OldEpoch: old.epoch, OldPID: old.pid, Changed: out.Changed}, nil, nil
			}
		}
	}
	if t == restartCredential {
		if old.broker != nil {
			old.broker.Close() // now: the new process's broker listens at the same epoch's path
		}
		if next, err = h.credentialRecheck(old, next, &newEpoch); err != nil {
			return out, nil, err
		}
	}
	c, fetch, err := h.startPending(ctx, old, next, newEpoch)
	if err != nil {
		return out, nil, err
	}
	out.Outcome, out.NewEpoch, out.NewPID = localapi.OutcomeRestarted, newEpoch, c.pid
	if fetch {
		if err := h.catalogReady(ctx, c); err != nil {
			return out, nil, err
		}
	}
	return out, c, nil
}

// decideLocked says whether a restart of trigger t replaces child old
// (nil when none runs) by one with identity next; when it does not, out
// is the answer: unchanged, or held (restart mode manual).
func (h *Host) decideLocked(old *child, next *build.Identity, why string, t trigger) (out restartOutcome, replace bool) {
	if old == nil && t == restartCredential {
		return restartOutcome{Outcome: localapi.OutcomeUnchanged}, false // the epoch ended meanwhile
	}
	if old != nil && t == restartCrash {
		// A build signal or mcpepoch restart brought a server up while
		// crash recovery waited: it stands.
		return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: old.epoch, NewPID: old.pid}, false
	}
	if old == nil {
		if h.ended != nil { // an idle exit or a crash: name what changed since it ran
			out.Changed = build.Changes(h.ended.identity, next)
		}
		return out, true
	}
	out.OldEpoch, out.OldPID = old.epoch, old.pid
	out.Changed = build.Changes(old.identity, next)
	if t == restartCredential && len(out.Changed) > 0 {
		h.logf("epoch %s: not started again with the approved credential: %v changed since the approval; the next build starts a new epoch, which needs its own approval", old.epoch, out.Changed)
		return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: old.epoch, NewPID: old.pid}, false
	}
	if len(out.Changed) == 0 && old.drift != nil && t != restartCredential {
		// The code on disk changed while the epoch ran (noteDriftLocked)
		// and is back as it was hashed: what the server read meanwhile
		// cannot be told, and its drift refusal promised that a build
		// starts an epoch on the code on disk.
		out.Changed = slices.Clone(old.drift)
	}
	if t == restartSignal && len(out.Changed) == 0 {
		h.pendingManual = false
		return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: old.epoch, NewPID: old.pid}, false
	}
	if t == restartSignal && h.opts.Mode == ModeManual {
		h.pendingManual = true
		h.logf("epoch %s: %s changed %v: restart held (restart mode manual; run "+selfcmd.Name()+" restart)", old.epoch, why, out.Changed)
		return restartOutcome{Outcome: localapi.OutcomeHeld, NewEpoch: old.epoch, NewPID: old.pid, Changed: out.Changed}, false
	}
	return out, true
}

// identityPendingLocked enters identity-pending on the way to newEpoch:
// client messages are held from now on, what old (nil when none runs)
// owed is answered, its grants are revoked, a grants policy re-read from
// mcpepoch.toml is put in force, and the audit log records the
// replacement (or, when closing, the end of the connection).
func (h *Host) identityPendingLocked(old *child, newEpoch epoch.Epoch, why string, t trigger, closing bool, out *restartOutcome) {
	if t != restartCrash {
		h.crashes = 0
	}
	h.pendingManual = false
	h.setState(StateIdentityPending)
	h.child = nil
	h.releaseVerifiedLocked() // calls held for old's identity wait for the new epoch (identity.go)
	// The errors of the calls this restart ends follow its
	// list_changed; those calls themselves are answered once old has
	// drained (restart.go).
	h.holdAborts = !closing
	if old != nil && t == restartCredential {
		// Same epoch: its grants and the calls waiting for them stay.
		h.cancelServerRequestsLocked(old)
	} else if old != nil {
		h.cancelServerRequestsLocked(old)
		out.GrantsRevoked = h.revokeEpochLocked(old.epoch) + old.driftRevoked // identity.go
	}
	prev := old
	if prev == nil {
		prev = h.ended // crash recovery: the epoch that exited on its own
		out.GrantsRevoked = h.endedRevoked
	}
	h.ended, h.endedRevoked = nil, 0
	var policy []string
	if !closing {
		policy = h.applyPolicyLocked(newEpoch) // a closing connection's policy ends with it
	}
	switch {
	case prev != nil && closing:
		h.audit.event(audit.TypeClientClosed, prev.epoch, h.run, map[string]any{
			"reason": "restart mode close: execution epoch ended on new code", "changed": out.Changed,
			"grants_revoked": strconv.Itoa(out.GrantsRevoked)})
	case prev != nil:
		reason := why
		if t == restartCredential {
			reason += " (same epoch and identity: started again with the credential's variable)"
		} else if old != nil && len(out.Changed) == 0 {
			reason += " (identical bytes: a new process is a new epoch)"
		}
		fields := map[string]any{
			audit.FieldPrevEpoch: string(prev.epoch), "reason": reason, "changed": out.Changed,
			"grants_revoked": strconv.Itoa(out.GrantsRevoked)}
		if policy != nil {
			fields["policy_changed"] = policy
		}
		h.audit.event(audit.TypeServerReplaced, newEpoch, h.run, fields)
	}
}

// stopOld stops the old child and reports whether the restart ends there
// (restart mode close: the host ends once the hook has its answer).
func (h *Host) stopOld(old *child, why string, t trigger, closing bool, out restartOutcome) bool {
	if t == restartCredential {
		h.logf("epoch %s: %s: stopping pid %d to start it again with the variable", old.epoch, why, old.pid)
	} else {
		h.logf("epoch %s: %s: %v changed: stopping pid %d", old.epoch, why, out.Changed, old.pid)
	}
	old.stop(h.opts.Grace)
	if !closing {
		return false
	}
	h.logf("epoch %s ended: %v", old.epoch, ErrClosed)
	// The socket handler writes the answer when restart returns, and the
	// process must not exit under it.
	go func() {
		time.Sleep(closeDelay)
		h.cancel(ErrClosed)
	}()
	return true
}

// startPending starts the child of newEpoch with identity next and makes
// it current, still identity-pending: the client's session is carried
// over (an initialize in flight is answered by the new child; a finished
// one is replayed; subscriptions/listen requests are re-sent). fetch says
// whether the client has initialized, so the catalog is fetched now.
func (h *Host) startPending(ctx context.Context, old *child, next *build.Identity, newEpoch epoch.Epoch) (c *child, fetch bool, err error) {
	c, err = h.start(next, newEpoch)
	if err != nil {
		h.mu.Lock()
		if old != nil {
			h.abortLocked(old, "server_exited", "") // an initialize kept for the new child
		}
		h.goDownLocked("could not start the server: " + err.Error())
		h.mu.Unlock()
		return nil, false, err
	}
	h.mu.Lock()
	h.adoptLocked(c)
	params, initialized, stateless := h.initParams, h.initialized, h.stateless
	c.caps = h.caps // replaced by its own initialize result in the handshake era
	if params != nil && !h.initDone {
		// The client's initialize was in flight: the session has not begun,
		// so the new child answers the client's own request, and the
		// catalog waits for the client to initialize.
		h.sendInitLocked(c)
		params, h.catalog, h.tools = nil, nil, nil
	}
	h.mu.Unlock()

	if params != nil && !stateless {
		if err := h.reinitialize(ctx, c, params, initialized); err != nil {
			return c, false, h.failStart(c, err)
		}
	}
	h.mu.Lock()
	for k, l := range h.listens {
		h.swallowAck[k] = true
		h.inflight[k] = &call{id: l.id, method: "subscriptions/listen", child: c, sent: time.Now()}
		c.send(append(l.line, '\n'))
	}
	h.mu.Unlock()
	return c, params != nil || stateless, nil
}

// The last phases of a restart: catalog-ready, ready, a failed start, and the session replay to a new child.

// catalogReady fetches the new child's catalog, when it declared tools,
// and its prompts and resources lists, and enters catalog-ready. A server
// without tools has no catalog: its calls pass unchecked and it answers
// them itself.
func (h *Host) catalogReady(ctx context.Context, c *child) error {
	h.mu.Lock()
	tools := c.caps.tools
	h.mu.Unlock()
	var cat *Catalog
	if tools {
		var err error
		if cat, err = h.fetchCatalog(ctx, c); err != nil {
			return h.failStart(c, err)
		}
	}
	lists := h.listDigests(ctx, c)
	h.mu.Lock()
	if cat != nil {
		h.setCatalogLocked(c, cat)
	} else {
		h.catalog, h.tools = nil, nil
	}
	h.changedLists = h.setListsLocked(lists)
	h.setState(StateCatalogReady)
	h.mu.Unlock()
	return nil
}

// readyLocked enters ready with child c: the client is told the catalog
// may have changed (unless announce is false: a same-epoch relaunch whose
// catalog revision stayed), then the held messages are forwarded in order.
func (h *Host) readyLocked(c *child, announce bool) error {
	if h.child != c {
		return fmt.Errorf("epoch %s: the server exited while starting (%s)", c.epoch, c.exitStatus())
	}
	h.setState(StateReady)
	h.recovering, h.idle, h.gaveUp = false, false, false
	if announce {
		h.announceLocked()
	}
	h.announceListsLocked(h.changedLists)
	h.changedLists = nil
	h.releaseAbortsLocked() // after list_changed (restart.go)
	if h.initParams != nil && !h.initDone {
		h.sendInitLocked(c) // one that arrived after startPending
	}
	held := h.held
	h.held = nil
	for _, line := range held {
		// A held line passed ParseClient once; it is read the same way
		// again, tools/call name and arguments included.
		if m, err := jsonrpc.ParseClient(line); err == nil {
			h.forwardLocked(m, line)
		}
	}
	return nil
}

// announceLocked tells the client the catalog may have changed: one
// notifications/tools/list_changed, plain in the legacy era (after
// notifications/initialized), and in the 2026-07-28 era one per
// subscriptions/listen that asked for it, tagged with its subscription id.
func (h *Host) announceLocked() {
	if h.stateless {
		for _, l := range h.listens {
			if l.tools {
				h.toClient(jsonrpc.RequestLine(nil, "notifications/tools/list_changed",
					map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: l.id}}))
			}
		}
		return
	}
	if h.initialized && h.caps.tools {
		h.toClient(jsonrpc.RequestLine(nil, "notifications/tools/list_changed", nil))
	}
}

// failStart stops a new child that could not be brought to ready. A
// protocol version mismatch closes the connection (the host must not mix
// versions in one session); anything else leaves the host down.
func (h *Host) failStart(c *child, err error) error {
	h.logf("epoch %s: %v", c.epoch, err)
	h.mu.Lock()
	if h.child == c {
		h.child = nil
	}
	h.abortLocked(c, "server_exited", "")
	h.goDownLocked(err.Error())
	h.mu.Unlock()
	c.stop(h.opts.Grace)
	var pm *ProtocolMismatchError
	if errors.As(err, &pm) {
		h.cancel(err)
	}
	return &startError{err: err, c: c}
}

// ProtocolMismatchError reports a new child that negotiated another protocol
// version than the client's session uses.
type ProtocolMismatchError struct {
	Session, Server string
}

func (e *ProtocolMismatchError) Error() string {
	return fmt.Sprintf("initialize replay: the new server negotiated protocol %q but the client's session uses %q; closing the connection rather than mixing versions", e.Server, e.Session)
}

// reinitialize replays the client's initialize to a new child under a
// private id, checks it negotiates the same protocolVersion, sends
// notifications/initialized and replays the session's log level and
// resource subscriptions in the order the client sent them.
func (h *Host) reinitialize(ctx context.Context, c *child, params json.RawMessage, initialized bool) error {
	// The client's params are replayed as it sent them, never decoded into
	// Go numbers: a 20-digit integer stays exact, 1e400 stays 1e400.
	raw, err := h.privateCall(ctx, c, "initialize", params)
	if err != nil {
		return fmt.Errorf("initialize replay: %w", err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(raw, &res)
	_, caps, _, _ := advertiseListChanged(append(append([]byte(`{"result":`), raw...), '}'))
	h.mu.Lock()
	want := h.protocol
	c.caps, c.answered = caps, true
	h.mu.Unlock()
	if want != "" && res.ProtocolVersion != want {
		return &ProtocolMismatchError{Session: want, Server: res.ProtocolVersion}
	}
	if !initialized {
		return nil
	}
	c.send(jsonrpc.RequestLine(nil, "notifications/initialized", nil))
	h.mu.Lock()
	session := slices.Clone(h.session)
	h.mu.Unlock()
	for _, r := range session {
		if err := h.replayRecorded(ctx, c, r); err != nil {
			h.logf("epoch %s: replaying the client's %s: %v", c.epoch, r.key, err)
		}
	}
	return nil
}

// A restart's end of the old epoch: the drain of its calls in flight, the order of its errors, and held calls kept from an epoch about to be replaced.

// Drain.
//
// At a restart the old server gets no new request (the client's are held
// from identity-pending on), but its stdin stays open and what it answers
// for up to Options.Drain (host.drain, 3 s) is passed to the client as
// it is, recorded under the old epoch: a call the old server finished is
// delivered, not reported as possibly lost. Only the calls still
// unanswered when the drain ends get server_restarted, once; then the
// old server is stopped as the MCP lifecycle asks. A client initialize
// kept for the next server and a re-sent subscriptions/listen are not
// waited for: the next server answers them.
//
// The new server starts once the old one has exited (host.drain_start
// "after", the default: a server that holds a port, a lock file or a
// database cannot run twice), or at once beside it ("during").
//
// The server_restarted errors of the calls a restart ended are written
// after the notifications/tools/list_changed the restart sends (or, when
// the restart fails, with the errors of the held requests), so that a
// client that reacts to the error by listing again gets the new catalog.

// drainOld waits up to Options.Drain for the answers old owes, then
// answers what is still unanswered with server_restarted (reason, and
// next, as abortLocked takes them). It returns at once when the drain is
// zero or nothing is owed, and when old exits or the host ends.
func (h *Host) drainOld(old *child, reason string, next epoch.Epoch) {
	h.mu.Lock()
	if h.opts.Drain <= 0 || !h.owesLocked(old) {
		h.abortLocked(old, reason, next)
		h.mu.Unlock()
		return
	}
	old.drained = make(chan struct{})
	h.mu.Unlock()
	h.infof("epoch %s: waiting up to %s (host.drain) for the answers pid %d owes", old.epoch, h.opts.Drain, old.pid)
	t := time.NewTimer(h.opts.Drain)
	defer t.Stop()
	select {
	case <-old.drained:
	case <-old.done:
	case <-t.C:
	case <-h.ctx.Done():
	}
	h.mu.Lock()
	old.drained, old.drainClosed = nil, false
	h.abortLocked(old, reason, next)
	h.mu.Unlock()
}

// owedLocked reports whether cl, in flight under key k, is a request
// child c owes an answer the drain waits for: one abortLocked would end.
func (h *Host) owedLocked(c *child, k string, cl *call) bool {
	return cl.child == c && cl.method != "initialize" && !(cl.method == "subscriptions/listen" && h.listens[k] != nil)
}

// owesLocked reports whether child c owes any answer the drain waits for.
func (h *Host) owesLocked(c *child) bool {
	for k, cl := range h.inflight {
		if h.owedLocked(c, k, cl) {
			return true
		}
	}
	return false
}

// drainAnswerLocked passes the answer m (line) of child c, which is not
// the current epoch, to the client when c is draining and owes it; it
// reports whether it did.
func (h *Host) drainAnswerLocked(c *child, m *jsonrpc.Message, line []byte) bool {
	if c.drained == nil || !m.IsResponse() {
		return false
	}
	k := jsonrpc.IDKey(m.ID)
	cl := h.inflight[k]
	if cl == nil || !h.owedLocked(c, k, cl) {
		return false
	}
	delete(h.inflight, k)
	if cl.tool != "" {
		h.audit.toolResult(c.epoch, h.run, cl.tool, toolError(m.Result), strconv.FormatInt(time.Since(cl.sent).Milliseconds(), 10))
	} else if cl.recorded {
		h.requestResultLocked(c, cl, m, line)
	}
	h.toClient(line)
	h.drainCheckLocked(c)
	return true
}

// drainCheckLocked ends the drain of child c once it owes nothing.
func (h *Host) drainCheckLocked(c *child) {
	if c.drained != nil && !c.drainClosed && !h.owesLocked(c) {
		c.drainClosed = true
		close(c.drained)
	}
}

// cancelDrainingLocked passes the client's notifications/cancelled
// (line) of call cl, forgotten already, to the draining server that runs
// it, whose stdin is still open, and ends the drain when that was the
// last answer it owed.
func (h *Host) cancelDrainingLocked(cl *call, line []byte) {
	c := cl.child
	if c == nil || c == h.child || c.drained == nil {
		return
	}
	c.send(append(line[:len(line):len(line)], '\n'))
	h.drainCheckLocked(c)
}

// abortToClientLocked writes the server_restarted error line of a call a
// restart ended: held until the restart has told the client the catalog
// may have changed (releaseAbortsLocked), else at once.
func (h *Host) abortToClientLocked(line []byte) {
	if h.holdAborts {
		h.heldAborts = append(h.heldAborts, line)
		return
	}
	h.toClient(line)
}

// releaseAbortsLocked writes the errors abortToClientLocked held, in
// order, and stops holding them.
func (h *Host) releaseAbortsLocked() {
	held := h.heldAborts
	h.holdAborts, h.heldAborts = false, nil
	for _, line := range held {
		h.toClient(line)
	}
}

// deferReadyLocked reports whether child c, brought up by a restart,
// waits (in catalog-ready, or identity-pending when the client has not
// initialized) for the restart queued behind it instead of
// entering ready: the held calls are then released into the epoch that
// restart leaves running, never into one it is about to replace.
func (h *Host) deferReadyLocked(c *child, announce bool) bool {
	if h.restartsQueued == 0 {
		return false
	}
	h.readyAfter, h.readyAnnounce = c, announce || h.readyAfter != nil && h.readyAnnounce
	h.infof("epoch %s: another restart is queued: held requests wait for it", c.epoch)
	return true
}

// finishDeferredLocked brings the child a restart left waiting for the
// next one (deferReadyLocked) to ready, once no restart is queued and it
// still runs: the queued restart did not replace it (the code was the
// same, or its start failed before it stopped this one).
func (h *Host) finishDeferredLocked() {
	c := h.readyAfter
	if c == nil || h.restartsQueued > 0 {
		return
	}
	h.readyAfter = nil
	if h.child != c || h.state == StateReady {
		return // replaced, exited, or ready already
	}
	if err := h.readyLocked(c, h.readyAnnounce); err != nil {
		h.logf("epoch %s: %v", c.epoch, err)
	}
}

func (h *Host) setState(s State) {
	h.state, h.stateSince = s, time.Now()
}

// sendInitLocked sends the client's held initialize to child c, once:
// an initialize kept from a server that exited, or that arrived while no
// server ran, is now c's to answer.
func (h *Host) sendInitLocked(c *child) {
	sent := false
	for _, cl := range h.inflight {
		if cl.method != "initialize" || cl.child == c {
			continue
		}
		cl.child = c
		if !sent {
			c.send(append(h.initLine[:len(h.initLine):len(h.initLine)], '\n'))
			h.askedLocked(c, cl.id)
			sent = true
		}
	}
}
