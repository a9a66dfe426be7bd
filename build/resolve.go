package build

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// resolve finds the entry file and the runtime binary, noting in id what it
// inferred, and hashes the wrappers on the way. launch is what the
// runtime's own arguments say it loads.
func resolve(spec Spec, dir string, id *Identity, fc *FileCache) (entry, runtime string, launch launchArgs, err error) {
	entry = spec.Entry
	path := spec.Path
	if path == "" {
		path = lookupEnv(spec, "PATH")
	}
	if len(spec.Command) == 0 {
		entry, runtime, err = resolveEntryOnly(spec, dir, path, id)
		return entry, runtime, launchArgs{}, err
	}
	whys := map[string]string{}
	env := func(name string) (string, bool) { return lookupEnvOK(spec, name) }
	rt, found, wrappers, rtArgs, direct, err := resolveCommand(spec.Command, dir, path, env, whys, id)
	if err != nil && spec.Unbuilt && strings.ContainsRune(spec.Command[0], '/') && errors.Is(err, fs.ErrNotExist) {
		// A binary the build has not written yet: it is the entry, recorded
		// as missing, so that the build that writes it is new code.
		id.Inferred = append(id.Inferred, "entry: "+spec.Command[0]+", not built yet")
		return abs(dir, spec.Command[0]), "", launchArgs{unbuilt: true}, nil
	}
	if err != nil {
		return "", "", launchArgs{}, &InputError{Field: "command", Path: spec.Command[0], Err: err}
	}
	for _, w := range wrappers {
		a, err := artifact(fc, RoleWrapper, dir, w, false)
		if err != nil {
			return "", "", launchArgs{}, err
		}
		a.Why = "a script the launch command runs before the runtime"
		if w, ok := whys[w]; ok {
			a.Why = w
		}
		id.Wrappers = append(id.Wrappers, a)
	}
	runtime = rt
	switch {
	case direct:
		launch = parseLaunch(rt, rtArgs)
		launch.args = rtArgs
	default:
		// A shim named for its runtime (pyenv's python3, a version
		// manager's node) passes its arguments on: read them as that
		// runtime would.
		launch = parseLaunch(spec.Command[0], spec.Command[1:])
		launch.args = spec.Command[1:]
	}
	if entry == "" && found == "" && !launch.known && ownProgram(dir, rt) {
		// A program built in the project (a Go or Rust server) is its own
		// code; the files its arguments name are what it reads or writes
		// (a config, a database), hashed as arguments (launchfiles.go).
		entry = rt
		id.Inferred = append(id.Inferred, "entry: the executable itself, a program in the project (the files its arguments name are arguments, not its code)")
	}
	if entry == "" {
		entry = inferEntry(spec, dir, launch, id)
	}
	if entry == "" && found != "" {
		entry = found
	}
	if found != "" && abs(dir, found) != abs(dir, entry) && !slices.ContainsFunc(wrappers, func(w string) bool { return abs(dir, w) == abs(dir, found) }) {
		// What the launch named first (sh ./server.sh's script, the file
		// a wrapper runs) is code too: hashed as a wrapper when the
		// runtime's own arguments name another entry.
		a, err := artifact(fc, RoleWrapper, dir, found, false)
		if err != nil {
			return "", "", launchArgs{}, err
		}
		a.Why = "a script the launch command runs before the runtime"
		id.Wrappers = append(id.Wrappers, a)
	}
	if entry == "" {
		entry = runtime
		id.Inferred = append(id.Inferred, "entry: the executable itself, no argument names a file")
	}
	if len(wrappers) == 0 && runtime != spec.Command[0] {
		id.Inferred = append(id.Inferred, "runtime "+spec.Command[0]+" resolved to "+runtime)
	}
	return entry, runtime, launch, nil
}

// ownProgram reports whether exe, with symbolic links resolved, is a
// compiled executable (nativeExecutable) inside the project at dir: a
// program the project built, its own entry.
func ownProgram(dir, exe string) bool {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return false
	}
	root, err := filepath.EvalSymlinks(dir)
	return err == nil && inside(root, real) && nativeExecutable(real)
}

// inferEntry finds the entry among the launch command's arguments: the
// script the runtime's options lead to (node -r x.cjs dist/server.js:
// dist/server.js; python -m pkg: pkg/__main__.py), else the first argument
// naming an existing file, else the first that has a code file's extension
// (.js, .py, …) and does not exist, so that a server not built yet is
// reported rather than given an identity of its runtime alone.
func inferEntry(spec Spec, dir string, l launchArgs, id *Identity) string {
	switch {
	case l.script != "":
		e := scriptPath(dir, l.script, l)
		id.Inferred = append(id.Inferred, "entry "+e+": the script "+l.runtime+" runs")
		return e
	case l.module != "":
		if e, ok := pythonModule(dir, l.module); ok {
			id.Inferred = append(id.Inferred, "entry "+e+": the module python -m "+l.module+" runs")
			return e
		}
		id.Inferred = append(id.Inferred, "python -m "+l.module+": not found in "+dir+", loaded from sys.path (the dependency trees)")
		return ""
	case l.goRun != nil:
		return ""
	}
	for _, arg := range spec.Command[1:] {
		if isRegular(abs(dir, arg)) {
			id.Inferred = append(id.Inferred, "entry "+arg+": first argument of the command naming a file")
			return arg
		}
	}
	for _, arg := range spec.Command[1:] {
		if !strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, " \t\n") && slices.Contains(codeExts, strings.ToLower(filepath.Ext(arg))) {
			id.Inferred = append(id.Inferred, "entry "+arg+": an argument of the command naming a code file")
			return arg
		}
	}
	return ""
}

// resolveEntryOnly infers the runtime from an entry given without a launch
// command.
func resolveEntryOnly(spec Spec, dir, path string, id *Identity) (entry, runtime string, err error) {
	entry = spec.Entry
	if entry == "" {
		return "", "", &InputError{Field: "entry", Err: errors.New("no entry file and no launch command given (set --entry or --command, or entry/command in mcpepoch.toml)")}
	}
	// No command: infer the runtime from the entry.
	var name string
	switch strings.ToLower(filepath.Ext(entry)) {
	case ".js", ".mjs", ".cjs":
		name = "node"
	case ".py":
		name = "python3"
	default:
		if fi, err := os.Stat(abs(dir, entry)); err == nil && fi.Mode()&0o111 != 0 {
			id.Inferred = append(id.Inferred, "runtime: "+entry+" is an executable, it is its own runtime")
			return entry, abs(dir, entry), nil
		}
		id.Inferred = append(id.Inferred, "runtime: unknown for "+entry+" (set command)")
		return entry, "", nil
	}
	runtime, err = lookPath(name, dir, path)
	if err != nil {
		return "", "", &InputError{Field: "runtime", Path: name, Err: err}
	}
	id.Inferred = append(id.Inferred, "runtime "+name+" inferred from the entry's extension, resolved to "+runtime)
	return entry, runtime, nil
}

// lookPath resolves name as exec.LookPath would for a child started in dir
// with the given PATH, then follows symlinks, so that the digest is of the
// bytes that run.
func lookPath(name, dir, path string) (string, error) {
	_, real, err := lookPathNamed(name, dir, path)
	return real, err
}

// lookPathNamed is lookPath that also returns the path the program is
// found at before symbolic links are followed (absolute): the path the
// process is started as, from which a runtime finds its own
// configuration (a virtual environment's bin/python finds pyvenv.cfg
// beside it, python.go).
func lookPathNamed(name, dir, path string) (named, real string, err error) {
	var p string
	if strings.Contains(name, "/") {
		p = abs(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			return "", "", err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", "", fmt.Errorf("not an executable file")
		}
	} else {
		for _, d := range filepath.SplitList(path) {
			if d == "" {
				d = "."
			}
			c := abs(dir, filepath.Join(d, name))
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				p = c
				break
			}
		}
		if p == "" {
			return "", "", exec.ErrNotFound
		}
	}
	real, err = filepath.EvalSymlinks(p)
	if err != nil {
		return "", "", err
	}
	return p, real, nil
}
