package host

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/trust"
)

// Status is what mcpepoch status shows of a host.
type Status = localapi.Status

// Status returns a snapshot of the host. The state is copied under h.mu;
// the manifest and /proc are read after it is released (see doc.go, "Goroutines and locks": a
// manifest replaced by a FIFO, or a slow disk, must not stall the client's
// traffic, which takes the same lock).
func (h *Host) Status() Status { return h.status(nil) }

// status is Status, with now, when not nil, the identity the host has just
// computed itself (restart), standing for the one drift would compute.
func (h *Host) status(now *build.Identity) Status {
	s, c, obs := h.statusLocked()
	if c != nil {
		r := h.record(c)
		s.Execution = &r
		s.Running = obs
		s.Drift = h.drift(c, obs, now, nil)
	}
	if s.Drift == nil {
		s.Drift = []string{}
	}
	s.ConfigChanged = h.configChange()
	h.noteAcceptedFloor()
	s.PolicyNotApplied = h.policyNotApplied()
	s.ClientUnknown = h.clients.ClientUnknown()
	if h.opts.Dir != "" {
		s.Root = trust.FloorRoot(h.opts.Dir)
	}
	h.mu.Lock()
	s.PolicyFloorMissing = h.floor.missing
	h.mu.Unlock()
	if err := h.audit.healthy(); err != nil {
		s.AuditUnavailable = err.Error() + ": tools/call and the other requests it records are refused until it can"
	}
	return s
}

// buildDrift is the Drift of status(now), for the answer to a build
// signal, with m the manifest the signal named as buildFields read it
// (nil: read it again).
func (h *Host) buildDrift(now *build.Identity, m *manifest.File) []string {
	h.mu.Lock()
	c := h.child
	var obs *Observed
	if c != nil {
		obs = c.observed
	}
	h.mu.Unlock()
	if c == nil {
		return []string{}
	}
	if d := h.drift(c, obs, now, m); d != nil {
		return d
	}
	return []string{}
}

// statusLocked copies what Status shows of the state machine, and returns
// the current child with its first observation.
func (h *Host) statusLocked() (Status, *child, *Observed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Status{AgentRun: h.run, Label: h.opts.Label, State: h.state, Mode: h.opts.Mode,
		HeldRestart:  h.pendingManual,
		SinceSeconds: time.Since(h.stateSince).Seconds(), Protocol: h.protocol,
		InFlight: len(h.inflight), Held: len(h.held), Crashes: h.crashes, GaveUp: h.gaveUp}
	for _, pe := range h.pending {
		if h.child != nil && pe.Epoch == h.child.epoch && !slices.Contains(s.Waiting, pe.Tool) {
			s.Waiting = append(s.Waiting, pe.Tool)
		}
	}
	switch {
	case h.stateless:
		s.Era = "2026-07-28 (stateless)"
	case h.initParams != nil:
		s.Era = "handshake"
	}
	if h.state == StateDown {
		s.Reason = h.downReason
		if h.ended != nil {
			s.LastStderr = h.ended.tail.Lines()
		}
	}
	if c := h.child; h.state == StateReady && c != nil && c.asked && !c.answered {
		s.State = localapi.StateStarting // sent initialize, has not answered it (handshake.go)
		s.Reason = c.handshake
	}
	if h.catalog != nil {
		s.Catalog, s.Tools = h.catalog.Revision, h.catalog.Names
	}
	if h.unverifiedLocked() && h.child.drift == nil { // a drifted epoch is decided: its Drift says so
		s.IdentityUnverified = fmt.Sprintf("a file the running code was hashed from changed; calls that need a grant wait (at most %s, %d waiting now) until the host has hashed it again", verifyHoldMax, len(h.verifying))
	}
	for _, a := range h.asks {
		if len(a.waiters) > 0 {
			s.WaitingApproval = append(s.WaitingApproval, localapi.WaitingCalls{Tool: a.tool, Epoch: a.epoch,
				Calls: len(a.waiters), SinceSeconds: time.Since(a.waiters[0].since).Seconds()})
		}
	}
	if h.child == nil {
		return s, nil, nil
	}
	return s, h.child, h.child.observed
}

// drift reads the latest build's manifest and /proc for child c and says
// how what runs differs from what was built. What runs is compared with the
// last successful build: a failed build that left the entry byte-identical
// (a Go compile error, a type-only tsc error) is no drift. now is passed
// to codeDrift. m, when not nil, is the manifest just read; else drift
// reads it. h.mu must not be held.
func (h *Host) drift(c *child, obs *Observed, now *build.Identity, m *manifest.File) []string {
	var last *build.Identity
	var lastID epoch.BuildID
	var left string
	var err error
	if m == nil {
		m, err = manifest.Read(layout.Manifest(h.opts.Dir))
	}
	if err == nil {
		last, lastID = m.LastSuccessful()
		if e := m.Identity().Entry; m.Build.Status == manifest.StatusFailed && e.Digest != "" && e.Digest == c.identity.Entry.Digest {
			left = ", as the failed build " + string(m.Build.ID) + " (exit " + strconv.Itoa(m.Build.ExitCode) + ") left it"
		}
	}
	return append(drift(c, obs, childproc.Observe(c.pid, false), last, lastID, left), h.codeDrift(c, now)...)
}

// Observed is what the host saw of a running server process from outside
// it (localapi.Observed).
type Observed = localapi.Observed

// drift compares what runs with what the identity and the last successful
// build (last, build lastID; nil when none is known) say and returns, in
// words, every way they differ (empty: running = built). obs is the
// observation after c's first message and live a fresh one (each nil where
// the platform has none); left is added to a difference in the entry
// (", as the failed build … left it").
func drift(c *child, obs, live *Observed, last *build.Identity, lastID epoch.BuildID, left string) []string {
	var out []string
	if live != nil && live.ExeDeleted {
		out = append(out, "running ≠ built: the executable of pid "+strconv.Itoa(c.pid)+" was deleted or replaced on disk since it started ("+live.Exe+")")
	}
	if obs != nil && obs.ExeDigest != "" {
		known := obs.ExeDigest == c.identity.Runtime.Digest || obs.ExeDigest == c.identity.Entry.Digest
		for _, w := range c.identity.Wrappers {
			known = known || obs.ExeDigest == w.Digest
		}
		if !known {
			out = append(out, "running ≠ built: pid "+strconv.Itoa(c.pid)+" runs "+obs.Exe+" ("+string(obs.ExeDigest)+"), which is neither the runtime nor the entry the identity names")
		}
	}
	if last == nil {
		return out
	}
	differs := func(built, running build.Artifact, extra string) {
		if built.Digest != "" && running.Digest != "" && built.Path == running.Path && built.Digest != running.Digest {
			out = append(out, "running ≠ built: the last successful build "+string(lastID)+" recorded "+built.Path+" "+string(built.Digest)+"; the running epoch started from "+string(running.Digest)+extra)
		}
	}
	differs(last.Entry, c.identity.Entry, left)
	for _, b := range last.Code {
		started := false
		for _, r := range c.identity.Code {
			differs(b, r, "")
			started = started || r.Path == b.Path
		}
		if !started && b.Path != "" {
			out = append(out, "running ≠ built: the last successful build "+string(lastID)+" recorded the code tree "+b.Path+", which the running epoch did not start from")
		}
	}
	return append(out, runtimeDrift(last, lastID, c.identity)...)
}
