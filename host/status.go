package host

import (
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
)

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
				s.Drift = append(s.Drift, "running ≠ built: the running epoch started from "+e.Path+" as the failed build "+string(m.Build.ID)+" (exit "+strconv.Itoa(m.Build.ExitCode)+") left it")
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
