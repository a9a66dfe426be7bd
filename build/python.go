package build

import "path/filepath"

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
		id.Inferred = append(id.Inferred, "PYTHONPYCACHEPREFIX is set: Python reads bytecode from that directory, which is not hashed (its value is, as a redirecting variable), and none from __pycache__")
	}
}
