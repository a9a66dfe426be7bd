package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// What a redirecting variable points at is code the server runs: a module
// in a NODE_PATH or PYTHONPATH directory outside the project, a library
// LD_PRELOAD names. These tests run a real server under a real host whose
// environment sets the variable, change the file, and see the host notice
// it (identity_drift for a watched directory) and a build start a new
// epoch that runs the new code; mcpepoch identity explains the input.

// nodePathServer is a stdio MCP server in plain CommonJS whose tool
// "helper" answers what require('helper') exports: a module that only
// NODE_PATH can resolve.
const nodePathServer = `const readline = require('node:readline');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.id === null) return;
  const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
  case 'initialize':
    return ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'nodepath', version: '1' } });
  case 'tools/list':
    return ok({ tools: [{ name: 'helper', description: 'helper', inputSchema: { type: 'object', properties: {} } }] });
  case 'tools/call':
    return ok({ content: [{ type: 'text', text: String(require('helper')) }] });
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
`

// pythonEnvServer is a stdio MCP server in plain Python whose tool "tag"
// answers extmod.TAG (a module only PYTHONPATH finds) and $PRELOAD_TAG
// (set by the constructor of the library LD_PRELOAD names), as "A:B".
const pythonEnvServer = `import json, os, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "pyenv", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": [{"name": "tag", "description": "tag", "inputSchema": {"type": "object", "properties": {}}}]})
    elif meth == "tools/call":
        import extmod
        ok({"content": [{"type": "text", "text": extmod.TAG + ":" + os.environ.get("PRELOAD_TAG", "none")}]})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
`

// writeOutside writes content to dir/name atomically, as a build does,
// creating dir/name's parent.
func writeOutside(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// runningEpoch waits for the host to run a server with its catalog and
// returns the epoch, different from not.
func (p *project) runningEpoch(not epoch.Epoch) epoch.Epoch {
	p.t.Helper()
	var e epoch.Epoch
	waitFor(p.t, waitLong, "the host to run a new epoch", func() bool {
		st := p.status()
		if st.Execution == nil || st.Catalog == "" {
			return false
		}
		e = st.Execution.Epoch
		return e != not
	})
	return e
}

// driftNaming waits for an identity_drift record whose changed list
// names sub.
func (p *project) driftNaming(sub string) {
	p.t.Helper()
	p.waitRecords("identity_drift naming "+sub, func(rs []audit.Record) bool {
		for _, r := range recordsOf(rs, audit.TypeIdentityDrift) {
			if strings.Contains(fieldJSON(r, "changed"), sub) {
				return true
			}
		}
		return false
	})
}

// An edited module in a NODE_PATH directory outside the project, which a
// running node server resolves with require: the host sees the tree
// change (identity_drift names the directory), a build starts a new epoch
// whose call runs the new module, and mcpepoch identity explains it.
func TestNodePathModuleEditedUnderHost(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	p := newProject(t, nil)
	np := t.TempDir()
	writeOutside(t, np, "helper/index.js", "module.exports = 'one';\n")
	p.write("server.cjs", nodePathServer)
	p.write("mcpepoch.toml", "command = [\"node\", \"server.cjs\"]\n\n[grants]\nexempt = [\"**\"]\n")
	env := []string{"NODE_PATH=" + np}

	out, code := p.runCLI(env, "identity")
	if code != 0 || !strings.Contains(out.Stdout, np+"\n") || !strings.Contains(out.Stdout, "a NODE_PATH directory") {
		t.Errorf("mcpepoch identity with NODE_PATH set (exit %d) does not explain the directory:\n%s", code, out)
	}
	c := startRawEnv(t, p, env, nil, "node", "server.cjs")
	c.initialize()
	c.listTools()
	first := p.runningEpoch("")
	wantText(t, c.callWait("helper", nil), "one")

	writeOutside(t, np, "helper/index.js", "module.exports = 'two';\n")
	p.driftNaming(np)
	p.record()
	p.runningEpoch(first)
	wantText(t, c.callWait("helper", nil), "two")
}

// A rebuilt library that LD_PRELOAD names, and an edited module in a
// PYTHONPATH directory outside the project: each is new code for a
// Python server under the host, which a build runs under a new epoch;
// mcpepoch identity explains both.
func TestPreloadLibraryAndPythonPathUnderHost(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	cc := testenv.Need(t, "cc", testenv.InstallCC)
	libs, pp := t.TempDir(), t.TempDir()
	lib := filepath.Join(libs, "libtag.so")
	buildLib := func(tag string) {
		t.Helper()
		src := filepath.Join(libs, "tag.c")
		writeOutside(t, libs, "tag.c", "#include <stdlib.h>\n__attribute__((constructor)) static void tag(void) { setenv(\"PRELOAD_TAG\", \""+tag+"\", 1); }\n")
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib+".tmp", src).CombinedOutput(); err != nil {
			testenv.Missing(t, fmt.Sprintf("cc cannot build a shared library (%v): %s\n%s", err, testenv.InstallCC, out))
		}
		if err := os.Rename(lib+".tmp", lib); err != nil {
			t.Fatal(err)
		}
	}
	buildLib("one")
	writeOutside(t, pp, "extmod.py", "TAG = 'one'\n")
	p := newProject(t, nil)
	p.write("server.py", pythonEnvServer)
	p.write("mcpepoch.toml", "command = [\"python3\", \"server.py\"]\n\n[grants]\nexempt = [\"**\"]\n")
	env := []string{"LD_PRELOAD=" + lib, "PYTHONPATH=" + pp}

	out, code := p.runCLI(env, "identity")
	if code != 0 || !strings.Contains(out.Stdout, "$LD_PRELOAD") || !strings.Contains(out.Stdout, "the libraries it names are loaded into the server") ||
		!strings.Contains(out.Stdout, pp+"\n") || !strings.Contains(out.Stdout, "a PYTHONPATH directory") {
		t.Errorf("mcpepoch identity with LD_PRELOAD and PYTHONPATH set (exit %d) does not explain them:\n%s", code, out)
	}
	if strings.Contains(out.Stdout, lib) {
		t.Errorf("mcpepoch identity shows the value of LD_PRELOAD:\n%s", out)
	}
	c := startRawEnv(t, p, env, nil, "python3", "server.py")
	c.initialize()
	c.listTools()
	first := p.runningEpoch("")
	wantText(t, c.callWait("tag", nil), "one:one")

	buildLib("two")
	p.record()
	second := p.runningEpoch(first)
	wantText(t, c.callWait("tag", nil), "one:two")

	writeOutside(t, pp, "extmod.py", "TAG = 'two'\n")
	p.driftNaming(pp)
	p.record()
	p.runningEpoch(second)
	wantText(t, c.callWait("tag", nil), "two:two")
}
