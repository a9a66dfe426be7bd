package main

import (
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/notify"
)

// findRoot returns the project root for the commands that talk to a
// project's hosts or read its state (status, restart, approve, grants,
// revoke, audit): as git finds its repository, the nearest of dir and its
// parents that holds mcpepoch.toml or a .mcpepoch directory, so that they
// work from any subdirectory of the project. When none does, dir itself.
// The result is absolute with symlinks resolved, as projectRoot's is.
func findRoot(dir string) (string, error) {
	start, err := projectRoot(dir)
	if err != nil {
		return "", err
	}
	for d := start; ; {
		if isProjectRoot(d) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return start, nil
		}
		d = parent
	}
}

// isProjectRoot reports whether d holds mcpepoch.toml or a .mcpepoch
// directory.
func isProjectRoot(d string) bool {
	if _, err := os.Lstat(filepath.Join(d, config.FileName)); err == nil {
		return true
	}
	fi, err := os.Stat(layout.Dir(d))
	return err == nil && fi.IsDir()
}

// noHostLine says that no host answered and where the command looked:
// "no host listening for the project at ROOT (sockets in DIR)" followed
// by what, e.g. ": nothing restarted".
func noHostLine(root, what string) string {
	where := "the project at " + printable(root)
	if dir, err := notify.Dir(root); err == nil && dir != layout.Sock(root) {
		where += " (sockets in " + printable(dir) + ")"
	}
	return "no host listening for " + where + what
}
