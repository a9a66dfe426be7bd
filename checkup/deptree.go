package checkup

import (
	"io/fs"
	"path/filepath"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// maxDepFiles bounds the walk of one dependency tree.
const maxDepFiles = 200_000

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
	after := m.Build.Completed.Add(time.Second) // mtime granularity
	roots := c.cfg.Deps
	if roots == nil {
		roots = []string{"node_modules"}
	}
	for _, r := range roots {
		full := r
		if !filepath.IsAbs(full) {
			full = filepath.Join(c.root, r)
		}
		var found []string
		n := 0
		filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil || n >= maxDepFiles || len(found) == 3 {
				return filepath.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil
			}
			n++
			if fi, err := d.Info(); err == nil && fi.ModTime().After(after) {
				found = append(found, c.rel(p))
			}
			return nil
		})
		for _, f := range found {
			c.problem(f, "changed after the last build ("+m.Build.Completed.Format(time.RFC3339)+"), inside the dependency tree "+r+
				": the running server writes there, and each write changes the identity, so the next build restarts the server",
				"keep the server's data outside its dependency trees (server-memory: set MEMORY_FILE_PATH), or list in deps in "+
					config.FileName+" only the trees the server loads")
		}
	}
}
