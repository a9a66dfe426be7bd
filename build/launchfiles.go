package build

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Two kinds of files change what a launch runs without being its code:
// the files its command line names (an env file node --env-file reads, a
// config file a server is given), and the configuration a runtime or a
// launcher reads at start (a virtual environment's pyvenv.cfg, which
// names the interpreter python runs; the .npmrc whose node-options npm
// puts in NODE_OPTIONS). Both are inputs of the identity: argFiles hashes
// the first (RoleArg), hashConfig the second (RoleConfig), which the
// runtime's description (runtimeConfig, python.go) and the launcher's
// (launcherConfig, pkgscript.go) name.

// configInput is a configuration file to hash into Identity.Config.
type configInput struct {
	path string // absolute
	why  string
	// missingOK records the file as missing when it does not exist: one
	// that appears later changes what runs, so it changes the identity.
	// Otherwise a missing file is left out.
	missingOK bool
}

// addConfig notes the configuration file path (absolute) for hashConfig,
// once.
func (id *Identity) addConfig(path, why string, missingOK bool) {
	path = filepath.Clean(path)
	if slices.ContainsFunc(id.configs, func(c configInput) bool { return c.path == path }) {
		return
	}
	id.configs = append(id.configs, configInput{path: path, why: why, missingOK: missingOK})
}

// hashConfig hashes the configuration files noted (addConfig) into
// id.Config: a file that does not exist is recorded missing when its
// input says so, and left out otherwise. Something other than a regular
// file by that name (a directory, a FIFO) is an error naming it.
func hashConfig(fc *FileCache, dir string, id *Identity) error {
	for _, c := range id.configs {
		if !c.missingOK && !exists(c.path) {
			continue
		}
		a, err := artifact(fc, RoleConfig, dir, c.path, true)
		if err != nil {
			return err
		}
		a.Why = c.why
		id.Config = append(id.Config, a)
	}
	return nil
}

// argFiles hashes into id.Args every file the launch's command lines name
// (the launch command and each command line it was followed through,
// Identity.Runs, less their program): each argument, and the value of each
// "--flag=value" argument, that names an existing regular file, relative
// to dir or absolute, whatever its extension (node --env-file .env, a
// server's --config ./config.toml), unless the identity hashes that file
// already in another role (the entry, a wrapper, a configuration file, a
// file or tree of code, a dependency tree). A directory is not hashed: a
// program given one may read any of its files, which is what code and
// deps are for. A word that names nothing is recorded missing when it
// looks like a path (pathLike), so that a file created there later (node
// --env-file-if-exists .env) changes the identity; other words
// ("start", "--port=8080") are no files. A file that a pattern of data
// (Spec.Data) matches is the server's data, not hashed.
func argFiles(fc *FileCache, dir, entry string, code []codeInput, data []string, id *Identity) error {
	own := []string{abs(dir, entry)}
	for _, list := range [][]Artifact{{id.Runtime}, id.Wrappers, id.Config, id.Lockfiles, id.EnvFiles} {
		for _, a := range list {
			if a.Path != "" {
				own = append(own, abs(dir, filepath.FromSlash(a.Path)))
			}
		}
	}
	hashed := func(full string) bool {
		if slices.Contains(own, full) || slices.ContainsFunc(code, func(c codeInput) bool { return c.path == full || c.lists(full) }) {
			return true
		}
		return slices.ContainsFunc(id.Deps, func(d Artifact) bool { return inside(abs(dir, filepath.FromSlash(d.Path)), full) })
	}
	lines := append([][]string{id.Command}, id.Runs...)
	for _, words := range lines {
		if len(words) == 0 {
			continue
		}
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "-") {
				_, v, ok := strings.Cut(w, "=")
				if !ok {
					continue
				}
				w = v
			}
			if w == "" {
				continue
			}
			full := abs(dir, w)
			if isData(dir, full, data) || hashed(full) || slices.ContainsFunc(id.Args, func(a Artifact) bool { return abs(dir, filepath.FromSlash(a.Path)) == full }) {
				continue
			}
			switch {
			case isRegular(full):
				a, err := artifact(fc, RoleArg, dir, full, false)
				if err != nil {
					return err
				}
				a.Why = "a file the launch command names (" + w + "): what the program reads from it is part of what runs"
				id.Args = append(id.Args, a)
			case pathLike(w) && !exists(full):
				id.Args = append(id.Args, Artifact{Role: RoleArg, Path: display(dir, full), Missing: true,
					Why: "a path the launch command names (" + w + "), no file yet: one created there changes what runs"})
			}
		}
	}
	return nil
}

// CleanPattern is a path or doublestar pattern of mcpepoch.toml (code,
// data, deps…) as it is matched and compared: slash-separated and cleaned,
// so that "./state.db", "state.db" and "x/../state.db" are one entry.
func CleanPattern(p string) string { return path.Clean(filepath.ToSlash(p)) }

// isData reports whether full (absolute) is matched by a pattern of data
// (doublestar, relative to dir; a leading "./" is ignored).
func isData(dir, full string, data []string) bool {
	rel, err := filepath.Rel(dir, full)
	if err != nil || len(data) == 0 {
		return false
	}
	rel = filepath.ToSlash(rel)
	for _, p := range data {
		if ok, _ := doublestar.Match(CleanPattern(p), rel); ok {
			return true
		}
	}
	return false
}

// pathLike reports whether a command-line word that names no file looks
// like a path: it contains a slash or starts with a dot (./x, ../x,
// /etc/x, .env), and no space, quote or "://" (a shell line given to
// sh -c, code given to node -e, a URL).
func pathLike(w string) bool {
	if w == "." || w == ".." || strings.ContainsAny(w, " \t\n'\"") || strings.Contains(w, "://") {
		return false
	}
	return strings.Contains(w, "/") || strings.HasPrefix(w, ".")
}

// exists reports whether something is at p (symbolic links followed).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
