// Package depwrites finds files written into a project's dependency trees
// after a build: not an install (a lockfile would have changed), but the
// running server keeping its data there, which changes the identity and so
// restarts it on every build. record and doctor both say so.
package depwrites

import (
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
)

// maxFiles bounds the walk of one dependency tree.
const maxFiles = 200_000

// Fix is how to stop a server writing into its dependency trees.
const Fix = "keep the server's data outside its dependency trees (server-memory: set MEMORY_FILE_PATH), or list in deps in " +
	config.FileName + " only the trees the server loads"

// After returns up to three regular files under each tree (paths
// relative to root, or absolute; a tree relative to root) changed after
// the time given, walking at most maxFiles files of a tree.
func After(root string, trees []string, after time.Time) map[string][]string {
	out := map[string][]string{}
	for _, r := range trees {
		full := r
		if !filepath.IsAbs(full) {
			full = filepath.Join(root, r)
		}
		n := 0
		filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil || n >= maxFiles || len(out[r]) == 3 {
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
