package build

import (
	"path/filepath"
	"strings"
	"testing"
)

// idWantOneChange fails unless Changes(prev, next) is one input whose
// name contains sub.
func idWantOneChange(t *testing.T, prev, next *Identity, sub string) {
	t.Helper()
	got := Changes(prev, next)
	if len(got) != 1 || !strings.Contains(got[0], sub) {
		t.Errorf("changes %q, want one naming %s", got, sub)
	}
}

// Node resolves a package the project lacks from the node_modules of every
// directory above it: one in a parent of the project root is part of the
// identity, so rewriting it is new code.
func TestIdentityParentNodeModules(t *testing.T) {
	t.Parallel()
	root := idTempDir(t)
	dir := filepath.Join(root, "proj")
	idWrite(t, root, idFile{path: "node_modules/helper/index.js", content: "module.exports = 'good';\n"})
	idWrite(t, dir, idFile{path: "dist/server.js", content: "console.log(require('helper'));\n"})
	spec := idSpec(dir, idFakeBin(t, "a"))
	before := idCompute(t, spec)
	idWrite(t, root, idFile{path: "node_modules/helper/index.js", content: "module.exports = 'changed';\n"})
	idWantOneChange(t, before, idCompute(t, spec), "node_modules")
}

// NODE_OPTIONS="--require FILE" (or --import, -r=…) makes node load FILE
// before the entry: its bytes are part of $NODE_OPTIONS's digest, though
// the value and the path stay out of the identity, and rewriting the
// file is new code.
func TestIdentityNodeOptionsNamedFile(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	pre := filepath.Join(idTempDir(t), "preload.js")
	idWrite(t, filepath.Dir(pre), idFile{path: "preload.js", content: "console.log('good');\n"})
	idWrite(t, dir, idFile{path: "local.mjs", content: "export {};\n"})
	for _, value := range []string{"--require " + pre, `--import="./local.mjs" --require=` + pre, "-r " + pre + " --max-old-space-size=64"} {
		spec := idSpec(dir, idFakeBin(t, "a"), "NODE_OPTIONS="+value)
		before := idCompute(t, spec)
		idWrite(t, filepath.Dir(pre), idFile{path: "preload.js", content: "console.log('changed " + value + "');\n"})
		idWantChanges(t, before, idCompute(t, spec), "$NODE_OPTIONS")
	}
	if got := envNamedFiles(Spec{}, "NODE_OPTIONS", `--import "./local.mjs" -r pkg --require=/a/b.js`, dir); len(got) != 2 || got[0] != filepath.Join(dir, "local.mjs") || got[1] != "/a/b.js" {
		t.Errorf("envNamedFiles: %q", got)
	}
}

// "sh ./server.sh" whose last line execs a program: the program is what
// serves, so it is the runtime and hashed, the shell is a wrapper, the
// script stays the entry, and replacing the program is new code. A script whose exec
// is not a plain command says that what it runs is not hashed.
func TestIdentityShellScriptExec(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "server.sh", content: "#!/bin/sh\nexport X=1\nexec ./bin/server --flag\n"},
		idFile{path: "bin/server", content: "\x7fELF fake server one\n", mode: 0o755},
	)
	spec := Spec{Dir: dir, Command: []string{"sh", "./server.sh"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin"}}
	before := idCompute(t, spec)
	if before.Runtime.Path != "bin/server" {
		t.Errorf("runtime %s, want bin/server (the script's exec)", before.Runtime.Path)
	}
	if w := wrapperPaths(before); len(w) != 1 || before.Entry.Path != "server.sh" {
		t.Errorf("wrappers %q, entry %s: want the shell, and server.sh as the entry", w, before.Entry.Path)
	}
	idWrite(t, dir, idFile{path: "bin/server", content: "\x7fELF fake server two\n", mode: 0o755})
	idWantOneChange(t, before, idCompute(t, spec), "bin/server")

	idWrite(t, dir, idFile{path: "server.sh", content: "#!/bin/sh\nexec \"$SERVER\"\n"})
	if id := idCompute(t, spec); !hasInferred(id, "the whole project is code") || len(id.Code) != 1 || id.Code[0].Path != "." {
		t.Errorf("a script with a dynamic exec: code %v, inferred %q, want the whole project as code", id.Code, id.Inferred)
	}
}

// Python runs the .pth files and usercustomize.py of its user
// site-packages at every start: that directory is a dependency tree, made
// or changed, unless -s or PYTHONNOUSERSITE keep Python out of it.
func TestIdentityPythonUserSite(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	home := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.py", content: "print('server')\n"})
	bin := idFakeBin(t, "py", "python3.11")
	env := []string{"PATH=" + bin, "HOME=" + home, "PYTHONDONTWRITEBYTECODE=1"}
	spec := Spec{Dir: dir, Command: []string{"python3.11", "server.py"}, Versions: idVersions, Environ: env}
	before := idCompute(t, spec)
	site := filepath.Join(home, ".local", "lib", "python3.11", "site-packages")
	idWrite(t, site, idFile{path: "usercustomize.py", content: "print('planted')\n"})
	planted := idCompute(t, spec)
	idWantOneChange(t, before, planted, "site-packages")
	idWrite(t, site, idFile{path: "evil.pth", content: "import os\n"})
	idWantOneChange(t, planted, idCompute(t, spec), "site-packages")

	off := spec
	off.Environ = append(env, "PYTHONNOUSERSITE=1")
	noSite := idCompute(t, off)
	off.Environ = env
	off.Command = []string{"python3.11", "-s", "server.py"}
	dashS := idCompute(t, off)
	idWrite(t, site, idFile{path: "usercustomize.py", content: "print('again')\n"})
	off.Environ = append(env, "PYTHONNOUSERSITE=1")
	idWantChanges(t, noSite, idCompute(t, off))
	off.Environ = env
	idWantChanges(t, dashS, idCompute(t, off))
}

// "sh ./server.sh" whose exec names the runtime's own entry (exec node
// dist/server.js): that file is the entry, and the script, which sets the
// server's variables, is still hashed, as a wrapper: editing it is new code.
func TestIdentityShellScriptExecWithEntry(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "server.sh", content: "#!/bin/sh\nexport X=1\nexec ./bin/node app.js\n"},
		idFile{path: "bin/node", content: "\x7fELF fake runtime\n", mode: 0o755},
		idFile{path: "app.js", content: "console.log(1)\n"},
	)
	spec := Spec{Dir: dir, Command: []string{"sh", "./server.sh"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin"}}
	before := idCompute(t, spec)
	if before.Entry.Path != "app.js" {
		t.Errorf("entry %s, want app.js (the file the exec'd runtime is given)", before.Entry.Path)
	}
	idWrite(t, dir, idFile{path: "server.sh", content: "#!/bin/sh\nexport X=2\nexec ./bin/node app.js\n"})
	idWantOneChange(t, before, idCompute(t, spec), "server.sh")
}
