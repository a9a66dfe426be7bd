package main

// End-to-end tests of code the runtime loads beside the entry's own tree:
// Python bytecode, node_modules nested in the code, modules beside an
// entry at the project root. Real python3 and node servers run through the
// real hook and host.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// pyServer is a stdio MCP server in plain Python: one tool, "lib", answers
// with the X of the module its mcpepoch.toml's command imports as lib.
const pyServer = `import json, sys
from %s import X
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": [{"name": "lib", "description": "the lib's X", "inputSchema": {"type": "object", "properties": {}}}]})
    elif meth == "tools/call":
        ok({"content": [{"type": "text", "text": "X=" + X}]})
    elif meth == "ping":
        ok({})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
`

// pyLookPython ends the test with testenv.Missing without python3.
func pyLookPython(t *testing.T) {
	t.Helper()
	testenv.Need(t, "python3", testenv.InstallPython)
}

// pyCall calls the tool "lib" (of pyServer or nodeLibServer) and returns
// its text.
func pyCall(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lib", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call lib: %v", err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call lib: %+v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// pyPlantBytecode writes the bytecode of src as app/__pycache__'s .pyc of
// the module rel (app/lib.py), its header matching rel's mtime and size,
// so that Python runs src instead of rel's source.
func pyPlantBytecode(t *testing.T, dir, rel, src string) {
	t.Helper()
	script := `import importlib.util, marshal, os, sys
path, src = sys.argv[1], sys.argv[2]
st = os.stat(path)
code = compile(src, path, "exec")
out = importlib.util.cache_from_source(path)
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xffffffff).to_bytes(4, "little") + (st.st_size & 0xffffffff).to_bytes(4, "little") + marshal.dumps(code))
`
	cmd := exec.Command("python3", "-B", "-c", script, filepath.Join(dir, rel), src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("planting bytecode: %v\n%s", err, out)
	}
}

// A .pyc planted in the package's __pycache__ whose header matches the
// source is what Python runs: the hook names the package as changed and
// the host restarts onto it. The server the host ran wrote no bytecode of
// its own (PYTHONDONTWRITEBYTECODE), so the record before the planting
// says nothing changed.
func TestPythonBytecodeInIdentity(t *testing.T) {
	t.Parallel()
	pyLookPython(t)
	dir := ideTempDir(t)
	ideWrite(t, dir, "app/__init__.py", "", 0o644)
	ideWrite(t, dir, "app/server.py", strings.Replace(pyServer, "%s", "app.lib", 1), 0o644)
	ideWrite(t, dir, "app/lib.py", "X = 'good'\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"py\"\ncommand = [\"python3\", \"-m\", \"app.server\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)
	var env []string // the test's own

	ideMust(t, dir, env, "record")
	cs, _ := ideHost(t, dir, env)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "app", "__pycache__", "*")); len(m) != 0 {
		t.Errorf("the server wrote bytecode into its code tree: %q", m)
	}
	if _, e := ideMust(t, dir, env, "record"); !strings.Contains(e, "build complete: nothing changed\n") {
		t.Errorf("record after the server ran:\n%s\nwant build complete: nothing changed", e)
	}
	o, _ := ideMust(t, dir, env, "identity")
	if !strings.Contains(o, "PYTHONDONTWRITEBYTECODE=1") {
		t.Errorf("identity does not say the server runs with PYTHONDONTWRITEBYTECODE=1:\n%s", o)
	}

	pyPlantBytecode(t, dir, "app/lib.py", "X = 'planted'\n")
	_, e := ideMust(t, dir, env, "record")
	if !strings.Contains(e, "build complete: **/__pycache__ changed\n") {
		t.Errorf("record after planting app/__pycache__:\n%s\nwant build complete: **/__pycache__ changed", e)
	}
	if got := pyCall(t, cs); got != "X=planted" {
		t.Errorf("lib after the restart = %q, want X=planted (the bytecode Python loads)", got)
	}
}

// A build that byte-compiles a script entry ("python3 -m py_compile
// server.py") writes bytecode Python never loads for the __main__ script:
// neither that nor a rewrite of the entry with the same bytes followed by
// another compile changes the identity, and the running server stays.
func TestPythonScriptEntryBytecodeIgnored(t *testing.T) {
	t.Parallel()
	pyLookPython(t)
	dir := ideTempDir(t)
	ideWrite(t, dir, "server.py", strings.Replace(pyServer, "%s", "lib", 1), 0o644)
	ideWrite(t, dir, "lib.py", "X = 'good'\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"py\"\ncommand = [\"python3\", \"server.py\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)
	var env []string // the test's own
	compile := func() {
		t.Helper()
		cmd := exec.Command("python3", "-m", "py_compile", "server.py")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("py_compile: %v\n%s", err, out)
		}
	}

	ideMust(t, dir, env, "record")
	cs, _ := ideHost(t, dir, env)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	compile()
	if m, _ := filepath.Glob(filepath.Join(dir, "__pycache__", "server.*.pyc")); len(m) != 1 {
		t.Fatalf("py_compile wrote %q", m)
	}
	if _, e := ideMust(t, dir, env, "record"); !strings.Contains(e, "build complete: nothing changed") || !strings.Contains(e, "running server unchanged") {
		t.Errorf("record after compiling the entry:\n%s\nwant nothing changed, running server unchanged", e)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "server.py"), later, later); err != nil {
		t.Fatal(err)
	}
	compile()
	if _, e := ideMust(t, dir, env, "record"); !strings.Contains(e, "build complete: nothing changed") || !strings.Contains(e, "running server unchanged") {
		t.Errorf("record after touching and compiling the entry:\n%s\nwant nothing changed, running server unchanged", e)
	}
}

// nodeLibServer is probeServer's protocol in CommonJS: the tool "lib"
// answers with what require(%s) exports.
const nodeLibServer = `const X = require(%s);
const readline = require('node:readline');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.id === null) return;
  const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
  case 'initialize':
    return ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'lib', version: '1' } });
  case 'tools/list':
    return ok({ tools: [{ name: 'lib', description: 'the lib', inputSchema: { type: 'object', properties: {} } }] });
  case 'tools/call':
    return ok({ content: [{ type: 'text', text: 'X=' + X }] });
  case 'ping':
    return ok({});
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
}).on('close', () => process.exit(0));
`

// A node_modules inside the code tree (dist/node_modules) is hashed as a
// dependency tree: a change in it is named and the host restarts onto it.
func TestNestedNodeModulesInIdentity(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	dir := ideTempDir(t)
	ideWrite(t, dir, "dist/server.js", strings.Replace(nodeLibServer, "%s", `'helper'`, 1), 0o644)
	ideWrite(t, dir, "dist/node_modules/helper/index.js", "module.exports = 'good';\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"nm\"\ncommand = [\"node\", \"dist/server.js\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)

	ideMust(t, dir, nil, "record")
	cs, _ := ideHost(t, dir, nil)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	ideWrite(t, dir, "dist/node_modules/helper/index.js", "module.exports = 'changed';\n", 0o644)
	if _, e := ideMust(t, dir, nil, "record"); !strings.Contains(e, "build complete: dist/node_modules changed\n") {
		t.Errorf("record after changing dist/node_modules:\n%s\nwant build complete: dist/node_modules changed", e)
	}
	if got := pyCall(t, cs); got != "X=changed" {
		t.Errorf("lib after the restart = %q, want X=changed", got)
	}
	o, _ := ideMust(t, dir, nil, "identity")
	if !strings.Contains(o, "a dependency tree inside the code tree .") {
		t.Errorf("identity does not say why dist/node_modules is hashed:\n%s", o)
	}
}

// pyRootOnPath is what a Python server below the project root runs first
// to import from the root (as a "python -m" launch has it on sys.path).
const pyRootOnPath = "import os, sys\nsys.path.insert(0, os.getcwd())\n"

// A script entry loads code from anywhere in the project (python3 srv.py
// importing a namespace package, node src/server.js requiring
// ../lib/x.js): the whole project tree of the files its runtime loads as
// code is hashed, wherever the entry lies, a change in a module is named
// as the tree ".", and the host restarts onto it; identity and record -v
// say why the tree is hashed.
func TestRootEntrySiblingsInIdentity(t *testing.T) {
	t.Parallel()
	const why, identityWhy = "loads code from anywhere below the project root", "the whole project tree is code"
	for _, tc := range []struct {
		name, entry, server, lib, libContent string
		command                              string
	}{
		{"python", "srv.py", strings.Replace(pyServer, "%s", "pkg.lib", 1), "pkg/lib.py", "X = '%s'\n", `["python3", "srv.py"]`},
		{"python sibling", "srv.py", strings.Replace(pyServer, "%s", "helper", 1), "helper.py", "X = '%s'\n", `["python3", "srv.py"]`},
		{"python namespace package", "srv.py", strings.Replace(pyServer, "%s", "ns.lib", 1), "ns/lib.py", "X = '%s'\n", `["python3", "srv.py"]`},
		{"python below the root", "app/main.py", pyRootOnPath + strings.Replace(pyServer, "%s", "ns.lib", 1), "ns/lib.py", "X = '%s'\n", `["python3", "app/main.py"]`},
		{"node", "server.js", strings.Replace(nodeLibServer, "%s", `'./lib.js'`, 1), "lib.js", "module.exports = '%s';\n", `["node", "server.js"]`},
		{"node below the root", "src/server.js", strings.Replace(nodeLibServer, "%s", `'../lib/x.js'`, 1), "lib/x.js", "module.exports = '%s';\n", `["node", "src/server.js"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(tc.name, "python") {
				pyLookPython(t)
			} else {
				testenv.LookNode(t)
			}
			dir := ideTempDir(t)
			ideWrite(t, dir, tc.entry, tc.server, 0o644)
			ideWrite(t, dir, "pkg/__init__.py", "", 0o644)
			ideWrite(t, dir, tc.lib, strings.Replace(tc.libContent, "%s", "good", 1), 0o644)
			ideWrite(t, dir, "mcpepoch.toml", "label = \"root\"\ncommand = "+tc.command+"\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)

			ideMust(t, dir, nil, "record")
			cs, _ := ideHost(t, dir, nil)
			if got := pyCall(t, cs); got != "X=good" {
				t.Fatalf("lib = %q, want X=good", got)
			}
			ideWrite(t, dir, tc.lib, strings.Replace(tc.libContent, "%s", "changed", 1), 0o644)
			_, e := ideMust(t, dir, nil, "record", "-v")
			if !strings.Contains(e, "build complete: . changed\n") {
				t.Errorf("record after changing %s:\n%s\nwant build complete: . changed", tc.lib, e)
			}
			if !strings.Contains(e, why) {
				t.Errorf("record -v does not say why the project tree is hashed:\n%s", e)
			}
			if got := pyCall(t, cs); got != "X=changed" {
				t.Errorf("lib after the restart = %q, want X=changed", got)
			}
			if o, _ := ideMust(t, dir, nil, "identity"); !strings.Contains(o, identityWhy) {
				t.Errorf("identity does not say what of the project is hashed:\n%s", o)
			}
		})
	}
}

// fakePyenv makes a pyenv layout in a new directory that really runs:
// shims/python3 in pyenv's own form, a libexec/pyenv that execs
// versions/$(cat version)/bin/PROGRAM, and versions/3.99.0/bin/python3
// linked to the real python3. It returns the root and the real
// interpreter, symlinks resolved.
func fakePyenv(t *testing.T) (root, python string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	python, err = filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(ideTempDir(t), ".pyenv")
	ideWrite(t, root, "shims/python3", "#!/usr/bin/env bash\nset -e\nprogram=\"${0##*/}\"\n\nexport PYENV_ROOT=\""+root+"\"\nexec \""+root+"/libexec/pyenv\" exec \"$program\" \"$@\"\n", 0o755)
	ideWrite(t, root, "libexec/pyenv", "#!/usr/bin/env bash\nshift\nprog=$1\nshift\nexec \"$PYENV_ROOT/versions/$(cat \"$PYENV_ROOT/version\")/bin/$prog\" \"$@\"\n", 0o755)
	ideWrite(t, root, "version", "3.99.0\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "versions/3.99.0/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(python, filepath.Join(root, "versions/3.99.0/bin/python3")); err != nil {
		t.Fatal(err)
	}
	return root, python
}

// A python3 reached through a pyenv shim on PATH is recorded as the
// interpreter pyenv would run, resolved from its version file without
// running the shim, not as the shim's bash; the shim is a wrapper. When
// the version names no installed interpreter, identity says so and hashes
// the version file.
func TestPyenvShimResolved(t *testing.T) {
	t.Parallel()
	pyLookPython(t)
	root, python := fakePyenv(t)
	dir := ideTempDir(t)
	ideWrite(t, dir, "app/__init__.py", "", 0o644)
	ideWrite(t, dir, "app/server.py", strings.Replace(pyServer, "%s", "app.lib", 1), 0o644)
	ideWrite(t, dir, "app/lib.py", "X = 'good'\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"shim\"\ncommand = [\"python3\", \"-m\", \"app.server\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)
	env := []string{"PATH=" + filepath.Join(root, "shims") + string(os.PathListSeparator) + os.Getenv("PATH"), "PYENV_VERSION="}

	type art struct{ Path, Why string }
	identity := func() (rt art, wrappers []art, inferred []string) {
		o, _ := ideMust(t, dir, env, "identity", "--json")
		var id struct {
			Runtime  art
			Wrappers []art
			Inferred []string
		}
		if err := json.Unmarshal([]byte(o), &id); err != nil {
			t.Fatalf("identity --json: %v\n%s", err, o)
		}
		return id.Runtime, id.Wrappers, id.Inferred
	}
	rt, wrappers, inferred := identity()
	if rt.Path != python {
		t.Errorf("runtime %s, want %s (pyenv's 3.99.0)\ninferred: %q", rt.Path, python, inferred)
	}
	if len(wrappers) != 1 || wrappers[0].Path != filepath.Join(root, "shims/python3") || !strings.Contains(wrappers[0].Why, "pyenv shim") {
		t.Errorf("wrappers %+v, want the pyenv shim", wrappers)
	}
	ideMust(t, dir, env, "record")
	cs, _ := ideHost(t, dir, env)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib through the shim = %q, want X=good", got)
	}

	ideWrite(t, root, "version", "3.98.0\n", 0o644)
	rt, wrappers, inferred = identity()
	if rt.Path == python {
		t.Errorf("runtime still %s with version 3.98.0 not installed", rt.Path)
	}
	if !slices.ContainsFunc(inferred, func(s string) bool { return strings.Contains(s, "3.98.0") && strings.Contains(s, "not found") }) {
		t.Errorf("identity does not say the shim's version was not found: %q", inferred)
	}
	if !slices.ContainsFunc(wrappers, func(a art) bool { return a.Path == filepath.Join(root, "version") }) {
		t.Errorf("wrappers %+v do not hash the version file", wrappers)
	}
}

// A .pyc planted in a venv's site-packages/__pycache__ whose header
// matches the module's source is what Python runs: the hook names the
// site-packages tree as changed and the host restarts onto it.
func TestPythonBytecodeInDependencyTree(t *testing.T) {
	t.Parallel()
	pyLookPython(t)
	dir := ideTempDir(t)
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
		testenv.Missing(t, fmt.Sprintf("python3 -m venv failed (%v): %s\n%s", err, testenv.InstallPython, out))
	}
	m, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python*", "site-packages"))
	if len(m) != 1 {
		t.Fatalf("site-packages of the venv: %q", m)
	}
	sp, _ := filepath.Rel(dir, m[0])
	ideWrite(t, dir, filepath.ToSlash(filepath.Join(sp, "vlib.py")), "X = 'good'\n", 0o644)
	ideWrite(t, dir, "app/__init__.py", "", 0o644)
	ideWrite(t, dir, "app/server.py", strings.Replace(pyServer, "%s", "vlib", 1), 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"venv\"\ncommand = [\".venv/bin/python\", \"-m\", \"app.server\"]\n\n[grants]\nexempt = [\"lib\"]\n", 0o644)

	ideMust(t, dir, nil, "record")
	cs, _ := ideHost(t, dir, nil)
	if got := pyCall(t, cs); got != "X=good" {
		t.Fatalf("lib = %q, want X=good", got)
	}
	if _, e := ideMust(t, dir, nil, "record"); !strings.Contains(e, "build complete: nothing changed\n") {
		t.Errorf("record after the server ran:\n%s\nwant build complete: nothing changed", e)
	}

	pyPlantBytecode(t, dir, filepath.Join(sp, "vlib.py"), "X = 'planted'\n")
	want := "build complete: " + filepath.ToSlash(sp) + " changed\n"
	if _, e := ideMust(t, dir, nil, "record"); !strings.Contains(e, want) {
		t.Errorf("record after planting %s/__pycache__:\n%s\nwant %s", sp, e, want)
	}
	if got := pyCall(t, cs); got != "X=planted" {
		t.Errorf("lib after the restart = %q, want X=planted (the bytecode Python loads)", got)
	}
}
