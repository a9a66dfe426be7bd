package checkup

import (
	"path/filepath"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/depwrites"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// writesSinceBuild reports the files that changed since the last recorded
// build and that no build writes (depWrites, argWrites), read against one
// reading of the run manifest.
func (c *check) writesSinceBuild() {
	m, err := manifest.Read(layout.Manifest(c.root))
	if err != nil || m == nil || m.Build.Completed.IsZero() {
		return
	}
	c.depWrites(m)
	c.argWrites(m)
}

// depWrites reports files in a dependency tree (deps in mcpepoch.toml,
// else node_modules) changed after the last recorded build: a build wrote
// its trees before it completed, so such a file was written since by
// something else, usually the running server keeping its data there
// (server-memory does unless MEMORY_FILE_PATH is set). The tree is part of
// the identity, so each such write makes the next build signal restart
// the server.
func (c *check) depWrites(m *manifest.File) {
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

// argWrites reports files the launch command names (build.RoleArg) whose
// content is not what the last recorded build hashed: a build does not
// write them, so the running server most likely does (a database given
// as --db ./state.db). Each write changes the identity: the host ends the
// epoch's grants (identity_drift) until the next build, which restarts
// the server.
func (c *check) argWrites(m *manifest.File) {
	for _, a := range m.Identity().Args {
		if a.Missing {
			continue
		}
		p := filepath.FromSlash(a.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.root, p)
		}
		d, _, err := build.FileDigest(p)
		if err != nil || d == a.Digest {
			continue
		}
		c.problem(a.Path, "named on the launch command and changed since the last build ("+m.Build.Completed.Format(time.RFC3339)+
			"): if the server writes it, each write changes the identity and ends the epoch's grants (identity_drift)",
			"name it as the server's data in "+config.FileName+" (data = [\""+a.Path+"\"]), which, once a host has run for the project, a person accepts with "+selfcmd.Cmd("policy accept")+"; if you edited it, rebuild")
	}
}
