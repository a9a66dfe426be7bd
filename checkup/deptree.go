package checkup

import (
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// maxDepFiles bounds the walk of one dependency tree.
const maxDepFiles = 200_000

// DepWritesFix is how to stop a server writing into its dependency trees.
const DepWritesFix = "keep the server's data outside its dependency trees (server-memory: set MEMORY_FILE_PATH), or list in deps in " +
	config.FileName + " only the trees the server loads"

// WrittenAfter returns up to three regular files under each tree (paths
// relative to root, or absolute; a tree relative to root) changed after
// the time given, walking at most maxDepFiles files of a tree.
func WrittenAfter(root string, trees []string, after time.Time) map[string][]string {
	out := map[string][]string{}
	for _, r := range trees {
		full := r
		if !filepath.IsAbs(full) {
			full = filepath.Join(root, r)
		}
		n := 0
		filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil || n >= maxDepFiles || len(out[r]) == 3 {
				return filepath.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil
			}
			n++
			if fi, err := d.Info(); err == nil && fi.ModTime().After(after) {
				if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
					p = rel
				}
				out[r] = append(out[r], p)
			}
			return nil
		})
	}
	return out
}

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
	found := WrittenAfter(c.root, roots, m.Build.Completed.Add(time.Second)) // mtime granularity
	for _, r := range roots {
		for _, f := range found[r] {
			c.problem(f, "changed after the last build ("+m.Build.Completed.Format(time.RFC3339)+"), inside the dependency tree "+r+
				": the running server writes there, and each write changes the identity, so the next build restarts the server", DepWritesFix)
		}
	}
}
