package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
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
}

// trigger says why restart runs.
type trigger int

const (
	restartSignal trigger = iota // a build signal: restart if identity changed, per Mode
	restartManual                // mcpepoch restart: always a new epoch
	restartCrash                 // the child exited on its own
)

// closeDelay is how long a host in restart mode close outlives the epoch
// it ends, so that its answer reaches the build hook.
const closeDelay = 300 * time.Millisecond

// ErrClosed is the cause Run returns with when the host closed the
// connection on purpose (ModeClose).
var ErrClosed = errors.New("execution epoch changed: connection closed so the client reconnects and initializes again")

// localAPI is the host's side of the local API: one handler per request
// type of the dispatch table (localapi.Routes), which says who may send it.
func (h *Host) localAPI() *localapi.Mux {
	m := localapi.NewMux(localapi.Routes())
	m.Handle(localapi.TypeBuildComplete, h.serveBuild)
	m.Handle(localapi.TypeBuildFailed, h.serveBuild)
	m.Handle(localapi.TypeRestart, h.serveRestart)
	m.Handle(localapi.TypeStatus, func(context.Context, notify.Peer, notify.Request) notify.Response {
		return localapi.WithPayload(h.response(), localapi.TypeStatus, h.Status())
	})
	m.Handle(localapi.TypeReview, func(context.Context, notify.Peer, notify.Request) notify.Response {
		h.mu.Lock()
		r := h.reviewLocked()
		h.mu.Unlock()
		return localapi.WithPayload(h.response(), localapi.TypeReview, r)
	})
	m.Handle(localapi.TypeApprove, h.serveApprove)
	m.Handle(localapi.TypeRevoke, h.serveRevoke)
	return m
}

// response is the start of every answer: the host's label and run id.
func (h *Host) response() notify.Response {
	return notify.Response{Label: h.opts.Label, Run: h.run}
}

// fail is the error answer with code and err's text.
func (h *Host) fail(code string, err error) notify.Response {
	resp := h.response()
	resp.Type, resp.Code, resp.Error = notify.TypeError, code, err.Error()
	return resp
}

// serveBuild answers a build signal: recorded in the audit log as the
// hook's claim, then (build_complete) a restart if the identity changed.
func (h *Host) serveBuild(ctx context.Context, _ notify.Peer, req notify.Request) notify.Response {
	h.audit.event(audit.TypeBuildRecorded, "", h.run, h.buildFields(req))
	if req.Type == localapi.TypeBuildFailed {
		out, err := h.current()
		return h.outcome(out, err)
	}
	out, err := h.restart(ctx, "build "+req.Build, restartSignal)
	return h.outcome(out, err)
}

// serveRestart answers mcpepoch restart: a new epoch now.
func (h *Host) serveRestart(ctx context.Context, _ notify.Peer, _ notify.Request) notify.Response {
	out, err := h.restart(ctx, "mcpepoch restart", restartManual)
	return h.outcome(out, err)
}

// serveApprove records a person's approval and answers with the grant.
func (h *Host) serveApprove(_ context.Context, peer notify.Peer, req notify.Request) notify.Response {
	a, err := localapi.DecodePayload[ApproveRequest](req.Payload)
	if err != nil {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("approve payload: %v", err))
	}
	g, err := h.approve(peer, a)
	if err != nil {
		return h.fail(localapi.CodeApprovalRefused, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeApprove, g)
}

// serveRevoke ends one grant and answers with it.
func (h *Host) serveRevoke(_ context.Context, peer notify.Peer, req notify.Request) notify.Response {
	r, err := localapi.DecodePayload[localapi.RevokeRequest](req.Payload)
	if err != nil || r.ID == "" {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("revoke payload: want {\"id\": …}"))
	}
	g, err := h.revoke(peer, r.ID)
	if err != nil {
		return h.fail(localapi.CodeNotFound, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeRevoke, g)
}

// outcome is the answer to a build signal or restart request.
func (h *Host) outcome(out restartOutcome, err error) notify.Response {
	if err != nil {
		return h.fail(localapi.CodeRestartFailed, err)
	}
	resp := h.response()
	resp.Type = string(out.Outcome)
	switch out.Outcome {
	case localapi.OutcomeRestarted:
		resp.GrantsRevoked = out.GrantsRevoked
		resp.OldEpoch, resp.NewEpoch = string(out.OldEpoch), string(out.NewEpoch)
		resp.OldPID, resp.NewPID = out.OldPID, out.NewPID
	case localapi.OutcomeClosed:
		resp.GrantsRevoked = out.GrantsRevoked
		resp.OldEpoch, resp.OldPID = string(out.OldEpoch), out.OldPID
	case localapi.OutcomeHeld, localapi.OutcomeUnchanged:
		resp.Epoch, resp.PID = string(out.NewEpoch), out.NewPID
		resp.Drift = h.Status().Drift
	default:
		return h.fail(notify.CodeInternal, fmt.Errorf("restart ended without an outcome (%q)", out.Outcome))
	}
	return resp
}

// buildFields describes a build signal for the audit log: the hook's word
// (build id, status, what its manifest says changed), recorded as a claim;
// the host's own view follows in server_replaced.
func (h *Host) buildFields(req notify.Request) map[string]any {
	f := map[string]any{"build": req.Build, "exit_code": strconv.Itoa(req.ExitCode)}
	if req.Manifest == layout.Manifest(h.opts.Dir) {
		if m, err := manifest.Read(req.Manifest); err == nil && m.Build.ID == req.Build {
			f["changed"] = m.Changed()
			f["status"] = m.Build.Status
		}
	}
	return f
}

// current reports the running epoch without changing anything.
func (h *Host) current() (restartOutcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.child == nil {
		return restartOutcome{}, fmt.Errorf("no server is running (%s)", h.downReason)
	}
	return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: h.child.epoch, NewPID: h.child.pid}, nil
}

// restart recomputes the identity of the launch command and, if it differs
// from the running epoch's (or no child runs, or a restart was asked for),
// replaces the child under a new epoch:
//
//	identity-pending: requests held; requests in flight at the old child
//	  answered with server_restarted; old process group stopped and reaped
//	new child started; the client's initialize replayed under a private id
//	  (legacy era) or its subscriptions/listen re-sent (2026-07-28)
//	catalog-ready: tools/list fetched, catalog revision computed
//	ready: notifications/tools/list_changed sent, then held requests
//	  released in order, each checked against the new catalog
//
// Restarts are serialized by restartMu; signals that arrive during one
// recompute afterwards, so a burst ends with one child on the last build.
func (h *Host) restart(ctx context.Context, why string, t trigger) (restartOutcome, error) {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()

	next, err := h.identity()
	if err != nil {
		return restartOutcome{}, err
	}
	h.mu.Lock()
	old := h.child
	var out restartOutcome
	if old != nil {
		out.OldEpoch, out.OldPID = old.epoch, old.pid
		out.Changed = build.Changes(old.identity, next)
		if t == restartSignal && len(out.Changed) == 0 {
			h.pendingManual = false
			h.mu.Unlock()
			return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: old.epoch, NewPID: old.pid}, nil
		}
		if t == restartSignal && h.opts.Mode == ModeManual {
			h.pendingManual = true
			h.mu.Unlock()
			h.logf("epoch %s: %s changed %v: restart held (restart mode manual; run mcpepoch restart)", old.epoch, why, out.Changed)
			return restartOutcome{Outcome: localapi.OutcomeHeld, NewEpoch: old.epoch, NewPID: old.pid, Changed: out.Changed}, nil
		}
	}
	if t != restartCrash {
		h.crashes = 0
	}
	closing := t == restartSignal && h.opts.Mode == ModeClose
	h.pendingManual = false
	newEpoch := epoch.New(time.Now())
	h.setState(StateIdentityPending)
	h.child = nil
	if old != nil {
		h.abortLocked(old, "epoch_changed", newEpoch)
		h.cancelServerRequestsLocked(old)
		out.GrantsRevoked = h.revokeEpochLocked(old.epoch)
	}
	prev := old
	if prev == nil {
		prev = h.ended // crash recovery: the epoch that exited on its own
		out.GrantsRevoked = h.endedRevoked
	}
	h.ended, h.endedRevoked = nil, 0
	switch {
	case prev != nil && closing:
		h.audit.event(audit.TypeClientClosed, prev.epoch, h.run, map[string]any{
			"reason": "restart mode close: execution epoch ended on new code", "changed": out.Changed,
			"grants_revoked": strconv.Itoa(out.GrantsRevoked)})
	case prev != nil:
		reason := why
		if old != nil && len(out.Changed) == 0 {
			reason += " (identical bytes: a new process is a new epoch)"
		}
		h.audit.event(audit.TypeServerReplaced, newEpoch, h.run, map[string]any{
			audit.FieldPrevEpoch: string(prev.epoch), "reason": reason, "changed": out.Changed,
			"grants_revoked": strconv.Itoa(out.GrantsRevoked)})
	}
	h.mu.Unlock()

	if old != nil {
		h.logf("epoch %s: %s: %v changed: stopping pid %d", old.epoch, why, out.Changed, old.pid)
		old.stop(h.opts.Grace)
		if closing {
			h.logf("epoch %s ended: %v", old.epoch, ErrClosed)
			// The host ends once the hook has its answer: the socket
			// handler writes it when this returns, and the process must
			// not exit under it.
			go func() {
				time.Sleep(closeDelay)
				h.cancel(ErrClosed)
			}()
			return restartOutcome{Outcome: localapi.OutcomeClosed, OldEpoch: old.epoch, OldPID: old.pid, Changed: out.Changed}, nil
		}
	}

	c, err := h.start(next, newEpoch)
	if err != nil {
		h.mu.Lock()
		if old != nil {
			h.abortLocked(old, "server_exited", "") // an initialize kept for the new child
		}
		h.goDownLocked("could not start the server: " + err.Error())
		h.mu.Unlock()
		return out, err
	}
	h.mu.Lock()
	h.child = c
	params, initialized, stateless := h.initParams, h.initialized, h.stateless
	if params != nil && !h.initDone {
		// The client's initialize was in flight: the session has not begun,
		// so the new child answers the client's own request, and the
		// catalog waits for the client to initialize.
		for _, cl := range h.inflight {
			if cl.method == "initialize" {
				cl.child = c
			}
		}
		c.send(append(h.initLine[:len(h.initLine):len(h.initLine)], '\n'))
		params, h.catalog, h.tools = nil, nil, nil
	}
	h.mu.Unlock()
	out.Outcome, out.NewEpoch, out.NewPID = localapi.OutcomeRestarted, newEpoch, c.pid

	if params != nil && !stateless {
		if err := h.reinitialize(ctx, c, params, initialized); err != nil {
			return out, h.failStart(c, err)
		}
	}
	h.mu.Lock()
	for k, l := range h.listens {
		h.swallowAck[k] = true
		h.inflight[k] = &call{id: l.id, method: "subscriptions/listen", child: c, sent: time.Now()}
		c.send(append(l.line, '\n'))
	}
	h.mu.Unlock()
	if params != nil || stateless {
		cat, err := h.fetchCatalog(ctx, c)
		if err != nil {
			return out, h.failStart(c, err)
		}
		h.mu.Lock()
		h.setCatalogLocked(c, cat)
		h.setState(StateCatalogReady)
		h.mu.Unlock()
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.child != c {
		return out, fmt.Errorf("epoch %s: the server exited while starting (%s)", c.epoch, c.exitStatus())
	}
	h.setState(StateReady)
	h.announceLocked()
	held := h.held
	h.held = nil
	for _, line := range held {
		if m, err := jsonrpc.Parse(line); err == nil {
			h.forwardLocked(m, line)
		}
	}
	return out, nil
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
	if h.initialized {
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
	return err
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
// private id, checks it negotiates the same protocolVersion and sends
// notifications/initialized.
func (h *Host) reinitialize(ctx context.Context, c *child, params json.RawMessage, initialized bool) error {
	var p map[string]any
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("initialize replay: the client's params: %v", err)
	}
	raw, err := h.privateCall(ctx, c, "initialize", p)
	if err != nil {
		return fmt.Errorf("initialize replay: %w", err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(raw, &res)
	h.mu.Lock()
	want := h.protocol
	h.mu.Unlock()
	if want != "" && res.ProtocolVersion != want {
		return &ProtocolMismatchError{Session: want, Server: res.ProtocolVersion}
	}
	if initialized {
		c.send(jsonrpc.RequestLine(nil, "notifications/initialized", nil))
	}
	return nil
}

// setCatalogLocked makes cat the catalog of child c.
func (h *Host) setCatalogLocked(c *child, cat *Catalog) {
	h.catalog = cat
	h.tools = compileTools(cat)
	for name, t := range h.tools {
		if t.schemaErr != nil {
			h.logf("epoch %s: tool %s: inputSchema not checked: %v", c.epoch, name, t.schemaErr)
		}
	}
	h.logf("epoch %s: catalog %s: %d tools %v", c.epoch, build.Digest(cat.Revision).Short(), len(cat.Names), cat.Names)
	h.audit.event(audit.TypeCatalogPublished, c.epoch, h.run, map[string]any{"catalog_revision": string(cat.Revision), "tools": cat.Names})
}

// fetchFirstCatalogLocked fetches the session's first catalog in the
// background once the client has initialized (or discovered). h.mu is held.
func (h *Host) fetchFirstCatalogLocked() {
	if h.fetching || h.catalog != nil || h.child == nil {
		return
	}
	h.fetching = true
	c := h.child
	go func() {
		h.restartMu.Lock()
		defer h.restartMu.Unlock()
		var cat *Catalog
		var err error
		h.mu.Lock()
		current := h.child == c && h.catalog == nil
		h.mu.Unlock()
		if current {
			cat, err = h.fetchCatalog(h.ctx, c)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.fetching = false
		switch {
		case err != nil:
			h.logf("epoch %s: catalog not known, calls pass unchecked: %v", c.epoch, err)
		case cat != nil && h.child == c && h.catalog == nil:
			h.setCatalogLocked(c, cat)
		}
	}()
}

// refreshCatalog re-lists after child c itself announced a change, then
// passes its notification on.
func (h *Host) refreshCatalog(c *child, line []byte) {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()
	cat, err := h.fetchCatalog(h.ctx, c)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.child != c {
		return // replaced meanwhile: the restart announced its own catalog
	}
	if err != nil {
		h.logf("epoch %s: re-list after the server's list_changed: %v", c.epoch, err)
	} else {
		h.setCatalogLocked(c, cat)
	}
	h.toClient(line)
}

// Status is what mcpepoch status shows of a host.
type Status = localapi.Status

// Status returns a snapshot of the host.
func (h *Host) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Status{AgentRun: h.run, Label: h.opts.Label, State: h.state, Mode: h.opts.Mode,
		HeldRestart:  h.pendingManual,
		SinceSeconds: time.Since(h.stateSince).Seconds(), Protocol: h.protocol,
		InFlight: len(h.inflight), Held: len(h.held), Crashes: h.crashes}
	switch {
	case h.stateless:
		s.Era = "2026-07-28 (stateless)"
	case h.initParams != nil:
		s.Era = "handshake"
	}
	if h.state == StateDown {
		s.Reason = h.downReason
	}
	if h.child != nil {
		r := h.record(h.child)
		s.Execution = &r
		s.Running = h.child.observed
		var latest *build.Identity
		m, err := manifest.Read(layout.Manifest(h.opts.Dir))
		if err == nil && m.Build.Status == manifest.StatusOK {
			latest = m.Identity()
		}
		s.Drift = drift(h.child, observe(h.child.pid, false), latest)
		if err == nil && m.Build.Status == manifest.StatusFailed {
			if e := m.Identity().Entry; e.Digest != "" && e.Digest == h.child.identity.Entry.Digest {
				s.Drift = append(s.Drift, "running ≠ built: the running epoch started from "+e.Path+" as the failed build "+m.Build.ID+" (exit "+strconv.Itoa(m.Build.ExitCode)+") left it")
			}
		}
	}
	if s.Drift == nil {
		s.Drift = []string{}
	}
	if h.catalog != nil {
		s.Catalog, s.Tools = h.catalog.Revision, h.catalog.Names
	}
	return s
}
