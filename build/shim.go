package build

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// shimManagers are the version managers known by the directory that holds
// their shims directory, less a leading dot. (An array, as xenv: a map
// would be built at the start of every program that links build.)
var shimManagers = [...]string{"pyenv", "nodenv", "rbenv", "asdf", "mise"}

// shimManager returns the version manager whose shim the script exe is
// (a file in ROOT/shims, ROOT being ~/.pyenv, ~/.nodenv, ~/.rbenv, ~/.asdf
// or mise's data directory, or $PYENV_ROOT, $NODENV_ROOT, $RBENV_ROOT), or
// "".
func shimManager(exe string, env func(string) (string, bool)) string {
	d := filepath.Dir(exe)
	if filepath.Base(d) != "shims" {
		return ""
	}
	for _, x := range xenv {
		if v, ok := env(x.rootVar); ok && v != "" && filepath.Clean(v) == filepath.Dir(d) {
			return x.manager
		}
	}
	if m := strings.TrimPrefix(filepath.Base(filepath.Dir(d)), "."); slices.Contains(shimManagers[:], m) {
		return m
	}
	return ""
}

// xenv describes the pyenv-style managers: the variables and the version
// file they read.
var xenv = [...]shimEnv{
	{"pyenv", "PYENV_VERSION", "PYENV_ROOT", ".python-version"},
	{"nodenv", "NODENV_VERSION", "NODENV_ROOT", ".node-version"},
	{"rbenv", "RBENV_VERSION", "RBENV_ROOT", ".ruby-version"},
}

// xenvOf is manager m's entry in xenv, ok false for one not there.
func xenvOf(m string) (shimEnv, bool) {
	for _, x := range xenv {
		if x.manager == m {
			return x, true
		}
	}
	return shimEnv{}, false
}

// shimEnv is one pyenv-style manager: its name, the variable naming the
// version, the one naming its root, and its version file's name.
type shimEnv struct{ manager, versionVar, rootVar, file string }

var exportRoot = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^export ([A-Z]+_ROOT)="([^"$` + "`" + `]+)"$`)
}) // compiled on first use

// shimRuntime resolves, without running it, the interpreter the shim exe
// of manager m runs for a server in dir, the way pyenv, nodenv and rbenv
// do: the version is $PYENV_VERSION (NODENV_, RBENV_), else the first
// .python-version (.node-version, .ruby-version) in dir or above, else
// ROOT/version, else "system"; each version it lists in turn is tried as
// ROOT/versions/V/bin/NAME, "system" as NAME on PATH without the shims
// directory. ROOT is what the shim exports (pyenv's shims name it), else
// $PYENV_ROOT, else the shims directory's parent. It returns "" and the
// version files it read when it cannot resolve (asdf and mise are not
// resolved), noting in id what it found.
func shimRuntime(m, exe, dir, path string, env func(string) (string, bool), id *Identity) (string, []string) {
	name := filepath.Base(exe)
	shims := filepath.Dir(exe)
	x, ok := xenvOf(m)
	if !ok {
		files := upward(dir, ".tool-versions")
		id.Inferred = append(id.Inferred, "runtime: "+display(dir, exe)+" is a "+m+" shim, which mcpepoch does not resolve: the shim and its version files are hashed, the runtime recorded is the shim's interpreter (set command to the interpreter's path to hash it)")
		return "", files
	}
	root := filepath.Dir(shims)
	if v, ok := env(x.rootVar); ok && v != "" {
		root = v
	}
	if b, err := safefile.ReadFile(exe, 1<<16); err == nil {
		if mm := exportRoot().FindSubmatch(b); mm != nil && string(mm[1]) == x.rootVar {
			root = string(mm[2])
		}
	}
	var versions []string
	var files []string
	how := ""
	if v, ok := env(x.versionVar); ok && v != "" {
		versions, how = strings.Split(v, ":"), "$"+x.versionVar
	} else {
		files = upward(dir, x.file)
		if len(files) == 0 && isRegular(filepath.Join(root, "version")) {
			files = []string{filepath.Join(root, "version")}
		}
		if len(files) > 0 {
			versions, how = versionFile(files[0]), display(dir, files[0])
		} else {
			versions, how = []string{"system"}, "no version file"
		}
	}
	for _, v := range versions {
		var p string
		var err error
		if v == "system" {
			p, err = lookPath(name, dir, withoutDir(path, shims))
		} else {
			p, err = lookPath(filepath.Join(root, "versions", v, "bin", name), dir, path)
		}
		if err == nil {
			id.Inferred = append(id.Inferred, "runtime: "+display(dir, exe)+" is a "+m+" shim; version "+v+" (from "+how+") resolved to "+p+", not run")
			return p, nil
		}
	}
	id.Inferred = append(id.Inferred, "runtime: "+display(dir, exe)+" is a "+m+" shim; versions "+strings.Join(versions, " ")+" (from "+how+") not found under "+root+"/versions: the shim and its version files are hashed, the runtime recorded is the shim's interpreter")
	if len(files) > 1 {
		files = files[:1]
	}
	return "", files
}

// versionFile reads the versions a pyenv-style version file lists, one or
// more per line, comments (#) left out.
func versionFile(p string) []string {
	b, err := safefile.ReadFile(p, 1<<16)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		out = append(out, strings.Fields(line)...)
	}
	return out
}

// upward returns the first file named name in dir or a directory above.
func upward(dir, name string) []string {
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, name); isRegular(p) {
			return []string{p}
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// withoutDir returns the PATH list without the directory d.
func withoutDir(path, d string) string {
	var keep []string
	for _, p := range filepath.SplitList(path) {
		if filepath.Clean(p) != d {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}
