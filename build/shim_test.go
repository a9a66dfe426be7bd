package build

import (
	"path/filepath"
	"testing"
)

// The interpreter a pyenv shim runs is chosen, without running the shim,
// by $PYENV_VERSION, else the nearest .python-version, else ROOT/version;
// an unknown version leaves the shim's interpreter as the runtime.
func TestPyenvShimVersionOrder(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	root := filepath.Join(dir, "home", ".pyenv")
	idWrite(t, dir,
		idFile{path: "home/.pyenv/shims/python3", content: "#!/bin/sh\nexec pyenv exec python3 \"$@\"\n", mode: 0o755},
		idFile{path: "home/.pyenv/versions/1.0/bin/python3", content: "one", mode: 0o755},
		idFile{path: "home/.pyenv/versions/2.0/bin/python3", content: "two", mode: 0o755},
		idFile{path: "home/.pyenv/version", content: "1.0\n"},
		idFile{path: "proj/srv.py", content: "print(1)\n"},
	)
	proj := filepath.Join(dir, "proj")
	runtime := func(env ...string) string {
		t.Helper()
		id, err := Compute(Spec{Dir: proj, Command: []string{"python3", "srv.py"}, Versions: idVersions,
			Environ: append([]string{"PATH=" + filepath.Join(root, "shims")}, env...)})
		if err != nil {
			t.Fatal(err)
		}
		return id.Runtime.Path
	}
	if got, want := runtime(), filepath.Join(root, "versions/1.0/bin/python3"); got != want {
		t.Errorf("ROOT/version: runtime %s, want %s", got, want)
	}
	idWrite(t, dir, idFile{path: ".python-version", content: "# pinned\n9.9 2.0\n"})
	if got, want := runtime(), filepath.Join(root, "versions/2.0/bin/python3"); got != want {
		t.Errorf(".python-version above the project: runtime %s, want %s", got, want)
	}
	if got, want := runtime("PYENV_VERSION=1.0"), filepath.Join(root, "versions/1.0/bin/python3"); got != want {
		t.Errorf("$PYENV_VERSION: runtime %s, want %s", got, want)
	}
	if got := runtime("PYENV_VERSION=3.0"); got != "/bin/sh" && got != mustReal(t, "/bin/sh") {
		t.Errorf("unknown version: runtime %s, want the shim's /bin/sh", got)
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
