package build

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// depArtifact returns the dependency tree of id at path, and whether
// there is one.
func depArtifact(id *Identity, path string) (Artifact, bool) {
	i := slices.IndexFunc(id.Deps, func(a Artifact) bool { return a.Path == filepath.ToSlash(path) })
	if i < 0 {
		return Artifact{}, false
	}
	return id.Deps[i], true
}

// A NODE_PATH directory outside the project is where node's require finds
// a module the node_modules lack: it is a dependency tree, explained as
// such, and an edited module in it is new code. An entry that does not
// exist, or lies in a tree hashed already, adds nothing; a Python server
// is not redirected by NODE_PATH.
func TestIdentityNodePathDirectory(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	np := idTempDir(t)
	idWrite(t, np, idFile{path: "helper/index.js", content: "module.exports = 'one';\n"})
	value := "NODE_PATH=" + filepath.Join(np, "absent") + ":" + np + ":node_modules/dep"
	for _, cacheDir := range []string{"", filepath.Join(dir, ".mcpepoch", "cache")} {
		spec := idSpec(dir, idFakeBin(t, "a"), value, "HOME="+idTempDir(t))
		spec.CacheDir = cacheDir
		before := idCompute(t, spec)
		a, ok := depArtifact(before, np)
		if !ok || a.Files != 1 || !strings.Contains(a.Why, "NODE_PATH directory") {
			t.Fatalf("NODE_PATH directory: %+v (found %v), want a tree of 1 file explained as a NODE_PATH directory; deps %+v", a, ok, before.Deps)
		}
		if len(before.Deps) != 2 {
			t.Errorf("deps %+v, want node_modules and the NODE_PATH directory only", before.Deps)
		}
		idWrite(t, np, idFile{path: "helper/index.js", content: "module.exports = 'two, in " + cacheDir + "';\n"})
		idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(np))
	}

	py := Spec{Dir: dir, Command: []string{"python3.11", "server.py"}, Versions: idVersions,
		Environ: []string{"PATH=" + idFakeBin(t, "py", "python3.11"), value, "HOME=" + idTempDir(t), "PYTHONDONTWRITEBYTECODE=1"}}
	idWrite(t, dir, idFile{path: "server.py", content: "print(1)\n"})
	if _, ok := depArtifact(idCompute(t, py), np); ok {
		t.Errorf("a python server's identity holds the NODE_PATH directory")
	}
}

// A PYTHONPATH directory outside the project is on sys.path: an edited
// module there is new code for a Python server; one that contains the
// project is not walked (it would hash the project's state files), and
// the explanation says so.
func TestIdentityPythonPathDirectory(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import extmod\n"})
	pp := idTempDir(t)
	idWrite(t, pp, idFile{path: "extmod.py", content: "TAG = 'one'\n"})
	env := []string{"PATH=" + idFakeBin(t, "py", "python3.11"), "HOME=" + idTempDir(t), "PYTHONDONTWRITEBYTECODE=1"}
	spec := Spec{Dir: dir, Command: []string{"python3.11", "server.py"}, Versions: idVersions,
		Environ: append(slices.Clone(env), "PYTHONPATH="+pp+":"+filepath.Dir(dir))}
	before := idCompute(t, spec)
	if a, ok := depArtifact(before, pp); !ok || !strings.Contains(a.Why, "PYTHONPATH directory") {
		t.Fatalf("PYTHONPATH directory not a dependency tree: %+v", before.Deps)
	}
	if _, ok := depArtifact(before, filepath.Dir(dir)); ok || !hasInferred(before, "contains the project") {
		t.Errorf("a PYTHONPATH directory containing the project: deps %+v, inferred %q", before.Deps, before.Inferred)
	}
	idWrite(t, pp, idFile{path: "extmod.py", content: "TAG = 'two'\n"})
	idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(pp))

	node := idSpec(dir, idFakeBin(t, "a"), "PYTHONPATH="+pp)
	idWrite(t, dir, idFile{path: "dist/server.js", content: "1\n"})
	if _, ok := depArtifact(idCompute(t, node), pp); ok {
		t.Errorf("a node server's identity holds the PYTHONPATH directory")
	}
}

// Node's global folders ($HOME/.node_modules and the like) are searched
// after NODE_PATH: one that exists is a dependency tree.
func TestIdentityNodeGlobalFolder(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	home := idTempDir(t)
	idWrite(t, home, idFile{path: ".node_modules/g/index.js", content: "module.exports = 1;\n"})
	spec := idSpec(dir, idFakeBin(t, "a"), "HOME="+home)
	before := idCompute(t, spec)
	if a, ok := depArtifact(before, filepath.Join(home, ".node_modules")); !ok || !strings.Contains(a.Why, "global folders") {
		t.Fatalf("$HOME/.node_modules not a dependency tree: %+v", before.Deps)
	}
	idWrite(t, home, idFile{path: ".node_modules/g/index.js", content: "module.exports = 2;\n"})
	idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(filepath.Join(home, ".node_modules")))
}

// A search-path directory with more entries than the limit is hashed
// shallowly, and the explanation says what is and is not seen: a changed
// package manifest or top-level file, or a new package, is new code; an
// edit deeper inside is not.
func TestIdentitySearchPathOverLimit(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	np := idTempDir(t)
	var files []idFile
	for i := range 8 {
		files = append(files, idFile{path: fmt.Sprintf("big/lib/f%d.js", i), content: "1\n"})
	}
	idWrite(t, np, append(files, idFile{path: "big/package.json", content: `{"main":"lib/f0.js"}`}, idFile{path: "top.js", content: "1\n"})...)
	spec := idSpec(dir, idFakeBin(t, "a"), "NODE_PATH="+np, "HOME="+idTempDir(t))
	spec.envTreeLimit = 5
	spec.CacheDir = filepath.Join(dir, ".mcpepoch", "cache") // the top-level files through the file cache, as record and host read them
	before := idCompute(t, spec)
	a, ok := depArtifact(before, np)
	if !ok || !strings.Contains(a.Why, "only its top level is hashed") || !hasInferred(before, "hashed shallowly") || a.Files != 2 {
		t.Fatalf("over the limit: %+v (found %v), inferred %q: want a shallow tree of 2 files, explained", a, ok, before.Inferred)
	}
	idWrite(t, np, idFile{path: "big/lib/f3.js", content: "2\n"})
	idWantChanges(t, before, idCompute(t, spec))
	for _, f := range []idFile{{path: "big/package.json", content: `{"main":"lib/f1.js"}`}, {path: "top.js", content: "2\n"}, {path: "new/package.json", content: "{}"}} {
		idWrite(t, np, f)
		next := idCompute(t, spec)
		idWantChanges(t, before, next, filepath.ToSlash(np))
		before = next
	}
	spec.envTreeLimit = 100
	if a, _ := depArtifact(idCompute(t, spec), np); a.Files != 11 || strings.Contains(a.Why, "top level") {
		t.Errorf("under the limit: %+v, want the whole tree of 11 files", a)
	}
}

// A Python outside a virtual environment imports from its own
// site-packages (PREFIX/lib/pythonX.Y/site-packages, PREFIX above its
// bin/): a module upgraded there is new code. A virtual environment
// without system site-packages does not load it, so it is not hashed.
func TestIdentityPythonSystemSite(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "import lib\n"})
	prefix := idTempDir(t)
	idWrite(t, prefix,
		idFile{path: "bin/python3.11", content: "\x7fELF fake python\n", mode: 0o755},
		idFile{path: "lib/python3.11/site-packages/lib/__init__.py", content: "V = 1\n"},
		idFile{path: "lib/python3.12/site-packages/other.py", content: "V = 1\n"},
	)
	site := filepath.Join(prefix, "lib", "python3.11", "site-packages")
	spec := Spec{Dir: dir, Command: []string{"python3.11", "server.py"}, Versions: idVersions,
		Environ: []string{"PATH=" + filepath.Join(prefix, "bin"), "HOME=" + idTempDir(t), "PYTHONDONTWRITEBYTECODE=1"}}
	before := idCompute(t, spec)
	if a, ok := depArtifact(before, site); !ok || !strings.Contains(a.Why, "the interpreter's own site-packages") || len(before.Deps) != 1 {
		t.Fatalf("deps %+v: want the interpreter's site-packages, explained, and not another version's", before.Deps)
	}
	idWrite(t, site, idFile{path: "lib/__init__.py", content: "V = 2\n"})
	idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(site))

	venv := filepath.Join(dir, ".venv")
	idWrite(t, venv, idFile{path: "pyvenv.cfg", content: "home = " + filepath.Join(prefix, "bin") + "\ninclude-system-site-packages = false\n"},
		idFile{path: "bin/python3.11", link: filepath.Join(prefix, "bin", "python3.11")})
	spec.Command = []string{".venv/bin/python3.11", "server.py"}
	if _, ok := depArtifact(idCompute(t, spec), site); ok {
		t.Errorf("a virtual environment without system site-packages: its base's site-packages is hashed")
	}
}
