package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// pyReal returns the python3 on PATH, or skips the test.
func pyReal(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3 is not on PATH: install Python 3 to run this test")
	}
	return py
}

// pyForge writes, with the real interpreter py, the .pyc Python looks for
// as the bytecode of the source file path (importlib's cache_from_source),
// compiled from src and with a header matching path's mtime and size, so
// that Python runs src instead of path's source. It returns the .pyc's
// path.
func pyForge(t *testing.T, py, path, src string) string {
	t.Helper()
	script := `import importlib.util, marshal, os, sys
path, src = sys.argv[1], sys.argv[2]
st = os.stat(path)
out = importlib.util.cache_from_source(path)
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xffffffff).to_bytes(4, "little") + (st.st_size & 0xffffffff).to_bytes(4, "little") + marshal.dumps(compile(src, path, "exec")))
print(out)
`
	out, err := exec.Command(py, "-B", "-c", script, path, src).CombinedOutput()
	if err != nil {
		t.Fatalf("forging the bytecode of %s: %v\n%s", path, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pyRun runs the real interpreter with args in dir, writing no bytecode,
// and returns its output.
func pyRun(t *testing.T, py, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-B"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", py, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pyCodeDigests returns the code artifacts of the identity of command in
// dir, by path, with the real python3 as runtime.
func pyCodeDigests(t *testing.T, py, dir string, command ...string) map[string]Digest {
	t.Helper()
	id, err := Compute(Spec{Dir: dir, Command: append([]string{py}, command...), Environ: []string{"PATH=" + filepath.Dir(py)}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Digest{}
	for _, a := range id.Code {
		out[a.Path] = a.Digest
	}
	return out
}

// pyRewind sets path's mtime a minute into the past, as a rewritten file
// of the same size: the .pyc forged before no longer matches it.
func pyRewind(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func sameDigests(a, b map[string]Digest) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A script entry at the project root importing a sibling: the identity
// counts the bytecode the real interpreter runs and nothing else. The
// entry's own .pyc is never run for "python3 server.py" and is not
// counted; a sibling's .pyc whose header matches is run and counted; once
// its header is stale, or under another cache tag (pytest's, PyPy's), Python runs
// the source again and the identity is the one without bytecode.
func TestPycacheScriptEntry(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import mod\nprint('server', mod.X)\n"}, idFile{path: "mod.py", content: "X = 'source'\n"})
	if got := pyRun(t, py, dir, "server.py"); got != "server source" {
		t.Fatalf("server.py printed %q", got)
	}
	bare := pyCodeDigests(t, py, dir, "server.py")

	pyForge(t, py, filepath.Join(dir, "server.py"), "print('forged server')\n")
	if got := pyRun(t, py, dir, "server.py"); got != "server source" {
		t.Fatalf("python3 server.py ran %q: the __main__ script's .pyc was loaded", got)
	}
	if got := pyCodeDigests(t, py, dir, "server.py"); !sameDigests(got, bare) {
		t.Errorf("the entry's own .pyc, never loaded, changed the code:\nbefore %v\nafter  %v", bare, got)
	}

	pycMod := pyForge(t, py, filepath.Join(dir, "mod.py"), "X = 'forged'\n")
	if got := pyRun(t, py, dir, "server.py"); got != "server forged" {
		t.Fatalf("server.py printed %q, want the forged module's X", got)
	}
	forged := pyCodeDigests(t, py, dir, "server.py")
	if d, ok := forged["**/__pycache__"]; !ok || sameDigests(forged, bare) || d == "" {
		t.Errorf("the sibling's .pyc Python runs is not counted: %v", forged)
	}

	pyRewind(t, filepath.Join(dir, "mod.py"))
	if got := pyRun(t, py, dir, "server.py"); got != "server source" {
		t.Fatalf("server.py printed %q after the source's mtime moved, want the source's X", got)
	}
	if got := pyCodeDigests(t, py, dir, "server.py"); !sameDigests(got, bare) {
		t.Errorf("a stale .pyc, which Python ignores, is counted:\nwant %v\ngot  %v", bare, got)
	}

	for _, tagged := range []string{strings.TrimSuffix(pycMod, ".pyc") + "-pytest-8.3.2.pyc", filepath.Join(dir, "__pycache__", "mod.pypy39.pyc")} {
		pyForge(t, py, filepath.Join(dir, "mod.py"), "X = 'forged'\n")
		if err := os.Rename(pycMod, tagged); err != nil {
			t.Fatal(err)
		}
		if got := pyCodeDigests(t, py, dir, "server.py"); !sameDigests(got, bare) {
			t.Errorf("%s, another cache tag than this python's, is counted:\nwant %v\ngot  %v", filepath.Base(tagged), bare, got)
		}
	}
}

// "python3 -m server" imports its __main__ through the import system,
// which loads the module's .pyc: there it is counted. A recompile of the
// unchanged source, which moves only the header's mtime, is no change.
func TestPycacheModuleEntry(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "print('server source')\n"})
	bare := pyCodeDigests(t, py, dir, "-m", "server")

	pyForge(t, py, filepath.Join(dir, "server.py"), "print('forged server')\n")
	if got := pyRun(t, py, dir, "-m", "server"); got != "forged server" {
		t.Fatalf("python3 -m server ran %q, want the forged .pyc", got)
	}
	forged := pyCodeDigests(t, py, dir, "-m", "server")
	if sameDigests(forged, bare) {
		t.Fatalf("the .pyc python -m runs is not counted: %v", forged)
	}

	pyRewind(t, filepath.Join(dir, "server.py"))
	pyForge(t, py, filepath.Join(dir, "server.py"), "print('forged server')\n")
	if got := pyCodeDigests(t, py, dir, "-m", "server"); !sameDigests(got, forged) {
		t.Errorf("a recompile with only a new mtime in the header changed the code:\nbefore %v\nafter  %v", forged, got)
	}
}

// In the project tree, the tree leaves its __pycache__ directories out
// and the bytecode Python loads from them is an artifact of its own, at
// every depth; the script run by path in a package is compiled from
// source.
func TestPycachePackageTree(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "app/__init__.py", content: ""},
		idFile{path: "app/server.py", content: "import sys; sys.path.insert(0, '.')\nfrom app.sub import lib\nprint(lib.X)\n"},
		idFile{path: "app/sub/__init__.py", content: ""},
		idFile{path: "app/sub/lib.py", content: "X = 'source'\n"})
	bare := pyCodeDigests(t, py, dir, "app/server.py")
	if _, ok := bare["."]; !ok || len(bare) != 1 {
		t.Fatalf("code %v, want the project tree alone", bare)
	}
	pyForge(t, py, filepath.Join(dir, "app/server.py"), "print('forged server')\n")
	if got := pyCodeDigests(t, py, dir, "app/server.py"); !sameDigests(got, bare) {
		t.Errorf("the script's own .pyc changed the code:\nbefore %v\nafter  %v", bare, got)
	}
	pyForge(t, py, filepath.Join(dir, "app/sub/lib.py"), "X = 'forged'\n")
	if got := pyRun(t, py, dir, "app/server.py"); got != "forged" {
		t.Fatalf("app/server.py printed %q, want the forged lib's X", got)
	}
	got := pyCodeDigests(t, py, dir, "app/server.py")
	if got["."] != bare["."] || got["**/__pycache__"] == "" {
		t.Errorf("code %v, want . unchanged and **/__pycache__ counted (before: %v)", got, bare)
	}
}

// Under -O Python looks for x.<tag>.opt-1.pyc and nothing else; with a
// pycache prefix it reads no __pycache__ at all.
func TestPycacheOptimizeAndPrefix(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import mod\nprint(mod.X)\n"}, idFile{path: "mod.py", content: "X = 'source'\n"})
	bare := pyCodeDigests(t, py, dir, "server.py")
	bareO := pyCodeDigests(t, py, dir, "-O", "server.py")

	script := `import importlib.util, sys; print(importlib.util.cache_from_source(sys.argv[1], optimization=1))`
	opt := pyRun(t, py, dir, "-c", script, filepath.Join(dir, "mod.py"))
	plain := pyForge(t, py, filepath.Join(dir, "mod.py"), "X = 'forged'\n")
	if err := os.Rename(plain, opt); err != nil {
		t.Fatal(err)
	}
	if got := pyRun(t, py, dir, "-O", "server.py"); got != "forged" {
		t.Fatalf("python3 -O server.py printed %q, want the forged .opt-1.pyc's X", got)
	}
	if got := pyRun(t, py, dir, "server.py"); got != "source" {
		t.Fatalf("python3 server.py printed %q, want the source's X", got)
	}
	if got := pyCodeDigests(t, py, dir, "server.py"); !sameDigests(got, bare) {
		t.Errorf("an .opt-1.pyc, which python without -O never loads, is counted:\nwant %v\ngot  %v", bare, got)
	}
	if got := pyCodeDigests(t, py, dir, "-O", "server.py"); sameDigests(got, bareO) {
		t.Errorf("the .opt-1.pyc python -O loads is not counted: %v", got)
	}
	prefix := idTempDir(t)
	if got := pyRun(t, py, dir, "-X", "pycache_prefix="+prefix, "-O", "server.py"); got != "source" {
		t.Fatalf("python3 -X pycache_prefix -O server.py printed %q, want the source's X", got)
	}
	// With a pycache prefix Python reads the bytecode of the project's
	// modules from outside every hashed tree: no identity.
	if _, err := Compute(Spec{Dir: dir, Command: []string{py, "-X", "pycache_prefix=" + prefix, "-O", "server.py"}, Environ: []string{"PATH=" + filepath.Dir(py)}}); err == nil ||
		!strings.Contains(err.Error(), "pycache_prefix") {
		t.Errorf("identity with -X pycache_prefix: %v, want it refused", err)
	}
}

// PYTHONPYCACHEPREFIX in the server's environment would have Python read
// the project's bytecode from a mirror tree under it, which no hashed tree
// holds: the server is started with it empty (CPython reads that as
// unset), so a forged .pyc there is never loaded, and the bytecode in
// __pycache__, which is loaded, is hashed.
func TestPycachePrefixEmptied(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import mod\nprint(mod.X)\n"}, idFile{path: "mod.py", content: "X = 'source'\n"})
	prefix := idTempDir(t)
	env := []string{"PATH=" + filepath.Dir(py), "PYTHONPYCACHEPREFIX=" + prefix}
	id, err := Compute(Spec{Dir: dir, Command: []string{py, "server.py"}, Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(id.LaunchEnv, "PYTHONPYCACHEPREFIX=") {
		t.Fatalf("launch env %q, want PYTHONPYCACHEPREFIX emptied", id.LaunchEnv)
	}
	// The agent's bytecode in the mirror tree, which Python would load
	// with the prefix in force.
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "mod.py"))
	if err != nil {
		t.Fatal(err)
	}
	mirror := pyRun(t, py, dir, "-c", "import importlib.util, sys; sys.pycache_prefix = sys.argv[2]; print(importlib.util.cache_from_source(sys.argv[1]))", real, prefix)
	forged := pyForge(t, py, filepath.Join(dir, "mod.py"), "X = 'forged'\n")
	if err := os.MkdirAll(filepath.Dir(mirror), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(forged, mirror); err != nil {
		t.Fatal(err)
	}
	run := func(env []string) string {
		cmd := exec.Command(py, "server.py")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	base := append(os.Environ(), "PYTHONPYCACHEPREFIX="+prefix)
	if got := run(append(slices.Clip(base), "PYTHONDONTWRITEBYTECODE=1")); got != "forged" {
		t.Fatalf("python with the prefix printed %q, want the forged bytecode's X (the test's forgery is wrong)", got)
	}
	if got := run(append(slices.Clip(base), id.LaunchEnv...)); got != "source" {
		t.Errorf("python with the identity's launch env printed %q, want the source's X", got)
	}
}

// pyCompileSourceless writes dir/name.pyc compiled from src, as Python's
// legacy sourceless location holds it, and leaves no name.py.
func pyCompileSourceless(t *testing.T, py, dir, name, src string) {
	t.Helper()
	srcPath := filepath.Join(dir, name+".py")
	idWrite(t, dir, idFile{path: name + ".py", content: src})
	pyRun(t, py, dir, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)", srcPath, filepath.Join(dir, name+".pyc"))
	if err := os.Remove(srcPath); err != nil {
		t.Fatal(err)
	}
}

// A sourceless helper.pyc at the project root, with no helper.py, is
// imported by Python from the script's directory (sys.path[0]): the
// project tree lists it, and a recompiled one is a change. (The tree lists
// every .pyc outside __pycache__, also one beside its own .py, which
// Python never imports: over-hashing that costs a restart.)
func TestPycacheSourcelessAtRoot(t *testing.T) {
	t.Parallel()
	py := pyReal(t)
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import helper, mod\nprint(helper.V, mod.X)\n"}, idFile{path: "mod.py", content: "X = 'source'\n"})
	pyCompileSourceless(t, py, dir, "helper", "V = 'h1'\n")
	if got := pyRun(t, py, dir, "server.py"); got != "h1 source" {
		t.Fatalf("server.py printed %q", got)
	}
	first := pyCodeDigests(t, py, dir, "server.py")
	if _, ok := first["."]; !ok {
		t.Fatalf("the project tree is not in the code: %v", first)
	}

	pyCompileSourceless(t, py, dir, "helper", "V = 'h2-changed'\n")
	if got := pyRun(t, py, dir, "server.py"); got != "h2-changed source" {
		t.Fatalf("server.py printed %q after the recompile", got)
	}
	second := pyCodeDigests(t, py, dir, "server.py")
	if sameDigests(first, second) {
		t.Errorf("a recompiled sourceless helper.pyc is no change: %v", second)
	}
}
