package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Outcome is what a build signal led to.
type Outcome struct {
	Restarted bool
	OldEpoch  epoch.Epoch
	NewEpoch  epoch.Epoch
	OldPID    int
	NewPID    int
}

// handle answers one request from the socket.
func (h *Host) handle(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
	resp := notify.Response{Label: h.opts.Label, Run: h.run}
	fail := func(code string, err error) notify.Response {
		resp.Type, resp.Code, resp.Error = notify.TypeError, code, err.Error()
		return resp
	}
	switch req.Type {
	case notify.TypeBuildComplete, notify.TypeBuildFailed:
		var out Outcome
		var err error
		if req.Type == notify.TypeBuildFailed {
			out, err = h.current()
		} else {
			out, err = h.Restart(ctx, "build "+req.Build)
		}
		if err != nil {
			return fail("restart_failed", err)
		}
		if out.Restarted {
			resp.Type = notify.TypeRestarted
			resp.OldEpoch, resp.NewEpoch = string(out.OldEpoch), string(out.NewEpoch)
			resp.OldPID, resp.NewPID = out.OldPID, out.NewPID
		} else {
			resp.Type = notify.TypeUnchanged
			resp.Epoch, resp.PID = string(out.NewEpoch), out.NewPID
		}
		return resp
	case notify.TypeStatus:
		b, err := json.Marshal(h.Status())
		if err != nil {
			return fail("internal", err)
		}
		resp.Type, resp.Payload = notify.TypeStatus, b
		return resp
	}
	return fail("bad_request", fmt.Errorf("unknown request type %q", req.Type))
}

// current reports the running epoch without changing anything.
func (h *Host) current() (Outcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.child == nil {
		return Outcome{}, fmt.Errorf("no server is running (%s)", h.downReason)
	}
	return Outcome{NewEpoch: h.child.epoch, NewPID: h.child.pid}, nil
}

// Restart recomputes the identity of the launch command and, if it differs
// from the running epoch's (or no child runs), replaces the child under a
// new epoch: identity-pending → old child stopped and reaped → new child
// started → client's initialize replayed → tools/list fetched
// (catalog-ready) → notifications/tools/list_changed sent → held requests
// released (ready). Restarts are serialized; signals that arrive during one
// recompute afterwards and so coalesce.
func (h *Host) Restart(ctx context.Context, why string) (Outcome, error) {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()

	next, err := build.Compute(h.opts.Spec)
	if err != nil {
		return Outcome{}, err
	}
	h.mu.Lock()
	old := h.child
	if old != nil && len(build.Changes(old.identity, next)) == 0 {
		h.mu.Unlock()
		return Outcome{NewEpoch: old.epoch, NewPID: old.pid}, nil
	}
	out := Outcome{Restarted: true}
	if old != nil {
		out.OldEpoch, out.OldPID = old.epoch, old.pid
	}
	newEpoch := epoch.New(time.Now())
	h.setState(StateIdentityPending)
	h.child = nil
	if old != nil {
		h.abortLocked(old, "epoch_changed", newEpoch)
	}
	h.mu.Unlock()

	var changed []string
	if old != nil {
		changed = build.Changes(old.identity, next)
		h.logf("epoch %s: %s changed %v: replacing pid %d", old.epoch, why, changed, old.pid)
		old.stop(h.opts.Grace)
	}

	c, err := startChild(h.opts.Command, h.opts.Dir, h.opts.Stderr, newEpoch, next)
	if err != nil {
		h.goDown("could not start the server: " + err.Error())
		return out, fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	h.mu.Lock()
	h.child = c
	params, initialized := h.initParams, h.initialized
	h.mu.Unlock()
	go func() {
		readLines(c.stdout, h.opts.MaxLine, func(line []byte, tooLong bool) { h.fromChild(c, line, tooLong) })
		c.wait()
		h.childExited(c)
	}()
	h.logf("epoch %s: started pid %d", newEpoch, c.pid)
	h.writeRecord(c)
	out.NewEpoch, out.NewPID = newEpoch, c.pid

	if params != nil {
		if err := h.reinitialize(ctx, c, params, initialized); err != nil {
			h.logf("epoch %s: %v", newEpoch, err)
			h.stopFailed(c, err.Error())
			return out, err
		}
	}
	h.mu.Lock()
	h.setState(StateReady)
	if initialized {
		h.toClient(requestLine(nil, "notifications/tools/list_changed", nil))
	}
	held := h.held
	h.held = nil
	for _, line := range held {
		if m, err := parseMessage(line); err == nil {
			h.forwardLocked(m, line)
		}
	}
	h.mu.Unlock()
	return out, nil
}

// reinitialize replays the client's initialize to a new child under a
// private id, checks it negotiates the same protocolVersion, sends
// notifications/initialized and fetches the catalog.
func (h *Host) reinitialize(ctx context.Context, c *child, params json.RawMessage, initialized bool) error {
	raw, err := h.privateCall(ctx, c, "initialize", params)
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
		return fmt.Errorf("initialize replay: the new server negotiated protocol %q, the client's session uses %q; refusing to mix versions", res.ProtocolVersion, want)
	}
	if initialized {
		c.send(requestLine(nil, "notifications/initialized", nil))
	}
	cat, err := h.fetchCatalog(ctx, c)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.catalog = cat
	h.setState(StateCatalogReady)
	h.mu.Unlock()
	h.logf("epoch %s: catalog %s: %d tools %v", c.epoch, build.Digest(cat.Revision).Short(), len(cat.Names), cat.Names)
	return nil
}

// goDown records that no child runs and answers held requests.
func (h *Host) goDown(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.downReason = reason
	h.setState(StateDown)
	for _, line := range h.held {
		if m, err := parseMessage(line); err == nil && m.isRequest() {
			h.toClient(errorLine(m.ID, CodeServerUnavailable, "server_unavailable: "+reason, nil))
		}
	}
	h.held = nil
}

// stopFailed stops a child that could not be brought to ready.
func (h *Host) stopFailed(c *child, reason string) {
	h.mu.Lock()
	if h.child == c {
		h.child = nil
	}
	h.mu.Unlock()
	c.stop(h.opts.Grace)
	h.goDown(reason)
}

// Status is what mcpepoch status shows of a host.
type Status struct {
	AgentRun     string           `json:"agentRun"`
	Label        string           `json:"label"`
	State        State            `json:"state"`
	SinceSeconds float64          `json:"secondsInState"`
	Reason       string           `json:"reason,omitempty"`
	Execution    *ExecutionRecord `json:"execution,omitempty"`
	Catalog      Revision         `json:"catalogRevision,omitempty"`
	Tools        []string         `json:"tools,omitempty"`
	Protocol     string           `json:"protocolVersion,omitempty"`
	InFlight     int              `json:"inFlight"`
	Held         int              `json:"held"`
}

// Status returns a snapshot of the host.
func (h *Host) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Status{AgentRun: h.run, Label: h.opts.Label, State: h.state,
		SinceSeconds: time.Since(h.stateSince).Seconds(), Protocol: h.protocol,
		InFlight: len(h.inflight), Held: len(h.held)}
	if h.state == StateDown {
		s.Reason = h.downReason
	}
	if h.child != nil {
		r := h.record(h.child)
		s.Execution = &r
	}
	if h.catalog != nil {
		s.Catalog, s.Tools = h.catalog.Revision, h.catalog.Names
	}
	return s
}
