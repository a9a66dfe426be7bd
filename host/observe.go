package host

import (
	"strconv"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// Observed is what the host saw of a running server process from outside
// it (localapi.Observed).
type Observed = localapi.Observed

// drift compares what runs with what the identity and the latest build say
// and returns, in words, every way they differ (empty: running = built).
// obs is the observation after c's first message and live a fresh one
// (each nil where the platform has none).
func drift(c *child, obs, live *Observed, latest *build.Identity) []string {
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
	if latest != nil && latest.Entry.Digest != "" && latest.Entry.Path == c.identity.Entry.Path && latest.Entry.Digest != c.identity.Entry.Digest {
		out = append(out, "running ≠ built: the latest build recorded "+latest.Entry.Path+" "+string(latest.Entry.Digest)+"; the running epoch started from "+string(c.identity.Entry.Digest))
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
