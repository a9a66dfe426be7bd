package checkup

import (
	"time"

	"github.com/mcpepoch/mcpepoch/internal/depwrites"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// depWrites reports files in a dependency tree (deps in mcpepoch.toml,
// else node_modules) changed after the last recorded build: a build wrote
// its trees before it completed, so such a file was written since by
// something else, usually the running server keeping its data there
// (server-memory does unless MEMORY_FILE_PATH is set). The tree is part of
// the identity, so each such write makes the next build signal restart
// the server.
func (c *check) depWrites() {
	m, err := manifest.Read(layout.Manifest(c.root))
	if err != nil || m == nil || m.Build.Completed.IsZero() {
		return
	}
	roots := c.cfg.Deps
	if roots == nil {
		roots = []string{"node_modules"}
	}
	found := depwrites.After(c.root, roots, m.Build.Completed.Add(time.Second)) // mtime granularity
	for _, r := range roots {
		for _, f := range found[r] {
			c.problem(f, "changed after the last build ("+m.Build.Completed.Format(time.RFC3339)+"), inside the dependency tree "+r+
				": the running server writes there, and each write changes the identity, so the next build restarts the server", depwrites.Fix)
		}
	}
}
