package build

import (
	"path/filepath"
	"strings"
)

// isPython reports whether the server's runtime is a Python interpreter:
// the launch command's runtime, or the binary it resolved to.
func isPython(l launchArgs, runtime string) bool {
	return l.runtime == "python" || (runtime != "" && isPythonName(filepath.Base(runtime)))
}

// pythonBytecode decides how a Python server's own bytecode writes are
// kept out of its identity. Python loads app/__pycache__/x.*.pyc instead
// of app/x.py when the .pyc's header matches x.py's mtime and size, so
// that bytecode is hashed (pycRules); a server that writes its bytecode
// there at each launch would then change its own identity. The host
// therefore starts a Python server with PYTHONDONTWRITEBYTECODE=1
// (Identity.LaunchEnv), unless the server's environment sets that variable
// itself: then Inferred says what the value means. With -E or -I python
// ignores the variable, which Inferred says too.
func pythonBytecode(spec Spec, l launchArgs, runtime string, id *Identity) {
	if !isPython(l, runtime) {
		return
	}
	if v, ok := lookupEnvOK(spec, "PYTHONDONTWRITEBYTECODE"); ok {
		if v == "" {
			id.Inferred = append(id.Inferred, "PYTHONDONTWRITEBYTECODE is set empty in the environment, which Python reads as unset: "+
				"the server writes __pycache__ into the code tree, which is hashed, so its first launch after an edit changes the identity again")
		} else {
			id.Inferred = append(id.Inferred, "PYTHONDONTWRITEBYTECODE is set in the environment: Python writes no bytecode, the host leaves it as it is")
		}
	} else {
		id.LaunchEnv = append(id.LaunchEnv, "PYTHONDONTWRITEBYTECODE=1")
		id.Inferred = append(id.Inferred, "python: the host starts the server with PYTHONDONTWRITEBYTECODE=1, so that it writes no __pycache__ into the hashed code tree "+
			"(bytecode there is hashed: Python loads a .pyc whose header matches its source)")
	}
	if l.ignoreEnv && !l.dontWrite {
		id.Inferred = append(id.Inferred, "python -E or -I: Python ignores PYTHONDONTWRITEBYTECODE and writes the bytecode of what it imports into __pycache__, which is hashed: "+
			"its first launch after an edit changes the identity again (add -B to the command)")
	}
	if v, ok := lookupEnvOK(spec, "PYTHONPYCACHEPREFIX"); ok && v != "" && !l.ignoreEnv {
		// Python would read the bytecode of the project's modules from a
		// mirror tree under that directory, which no hashed tree holds and
		// anything may write: the host empties it (CPython reads an empty
		// PYTHONPYCACHEPREFIX as unset), so Python reads __pycache__,
		// whose bytecode is hashed (pycRules).
		id.LaunchEnv = append(id.LaunchEnv, "PYTHONPYCACHEPREFIX=")
		id.Inferred = append(id.Inferred, "PYTHONPYCACHEPREFIX is set: the host starts the server with it empty, so that Python reads bytecode only from __pycache__, which is hashed, not from a directory outside the project's code")
	}
}

// runtimeConfig notes (Identity.addConfig) the configuration files the
// runtime reads at start from beside itself or from the project, which
// change what runs while no code file changes:
//
//   - Python: the pyvenv.cfg of a virtual environment (pythonVenvConfig);
//   - bun: the project's bunfig.toml, whose preload lists modules bun
//     loads before the entry (https://bun.sh/docs/runtime/bunfig: "add a
//     bunfig.toml file to your project root, alongside your
//     package.json"), present or missing.
//
// Node reads no file at start that its command line or NODE_OPTIONS does
// not name (--env-file: argFiles; -r: code).
func runtimeConfig(dir string, l launchArgs, runtime string, id *Identity) {
	switch {
	case isPython(l, runtime):
		named := id.named
		if named == "" {
			named = runtime
		}
		if named != "" {
			pythonVenvConfig(dir, named, id)
			pythonPthConfig(named, runtime, id)
		}
	case l.runtime == "bun":
		id.addConfig(filepath.Join(dir, "bunfig.toml"), "bun's configuration in the project: its preload runs before the entry", true)
	}
}

// pythonPthConfig notes the ._pth files CPython reads at start beside the
// executable it was started as (exe, symbolic links not followed) and
// beside the one that runs (runtime, resolved): the file name without its
// extension, then "._pth" (.venv/bin/python._pth; python3.11 gives
// python3._pth). One that exists replaces sys.path with the directories
// it lists, on every platform since Python 3.11 (Modules/getpath.py:
// "CHECK FOR ._pth FILE"), so where it would be read is recorded, present
// or missing: one created there is another sys.path.
func pythonPthConfig(exe, runtime string, id *Identity) {
	const why = "a ._pth file beside the Python executable, which CPython reads at start: it replaces sys.path with the directories it lists"
	for _, p := range []string{exe, runtime} {
		if p == "" {
			continue
		}
		base := filepath.Base(p)
		id.addConfig(filepath.Join(filepath.Dir(p), strings.TrimSuffix(base, filepath.Ext(base))+"._pth"), why, true)
	}
}

// pythonVenvConfig notes the pyvenv.cfg that makes the Python started as
// exe (absolute, symbolic links not followed: sys.executable) a virtual
// environment's. CPython looks for it at start (Modules/getpath.py; the
// venv documentation, https://docs.python.org/3/library/venv.html, and
// site's: "If a file named pyvenv.cfg exists one directory above
// sys.executable, sys.prefix and sys.exec_prefix are set to that
// directory"): first in the executable's directory, then in its parent,
// and reads the first it finds; its home names the installation whose
// interpreter and standard library run, include-system-site-packages what
// site adds to sys.path. So the one found is hashed, and the one before it
// in that order, missing, since one created there would be read instead.
// An interpreter inside the project with neither has both recorded
// missing: whoever writes the project could make it a virtual
// environment's. Inside or outside the project, a venv's pyvenv.cfg
// decides which interpreter runs.
func pythonVenvConfig(dir, exe string, id *Identity) {
	beside := filepath.Join(filepath.Dir(exe), "pyvenv.cfg")
	above := filepath.Join(filepath.Dir(filepath.Dir(exe)), "pyvenv.cfg")
	const why = "the virtual environment's pyvenv.cfg, which Python reads at start: its home names the installation whose interpreter and standard library run"
	const whyMissing = "where Python looks for a pyvenv.cfg first (beside the executable): one created there would name another interpreter"
	switch {
	case exists(beside):
		id.addConfig(beside, why, true)
	case exists(above):
		id.addConfig(beside, whyMissing, true)
		id.addConfig(above, why, true)
	case inside(dir, exe):
		id.addConfig(beside, whyMissing, true)
		id.addConfig(above, "where Python looks for a pyvenv.cfg (one directory above the executable): one created there would name another interpreter", true)
	}
}
