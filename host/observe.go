package host

import (
	"strconv"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/localapi"
)

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
		out = append(out, "running ≠ built: the executable of pid "+itoa(c.pid)+" was deleted or replaced on disk since it started ("+live.Exe+")")
	}
	if obs != nil && obs.ExeDigest != "" {
		known := obs.ExeDigest == c.identity.Runtime.Digest || obs.ExeDigest == c.identity.Entry.Digest
		for _, w := range c.identity.Wrappers {
			known = known || obs.ExeDigest == w.Digest
		}
		if !known {
			out = append(out, "running ≠ built: pid "+itoa(c.pid)+" runs "+obs.Exe+" ("+string(obs.ExeDigest)+"), which is neither the runtime nor the entry the identity names")
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

func itoa(n int) string { return strconv.Itoa(n) }
