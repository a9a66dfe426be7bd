package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// nodeServer is a stdio MCP server in plain node, server.mjs, whose tool
// "read" answers with what ./lib/helper.mjs (imported at start) returns.
const nodeServer = `import { createInterface } from "node:readline";
import { answer } from "./lib/helper.mjs";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const ok = (result) => send({ jsonrpc: "2.0", id: m.id, result });
  if (m.method === "initialize") ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "node", version: "1" } });
  else if (m.method === "tools/list") ok({ tools: [{ name: "read", description: "read", inputSchema: { type: "object", properties: {} } }] });
  else if (m.method === "tools/call") ok({ content: [{ type: "text", text: answer() }] });
  else send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } });
});
`

// newNodeProject is a project holding server.mjs and lib/helper.mjs, with
// mcpepoch.toml's command set to command.
func newNodeProject(t *testing.T, command string) *project {
	t.Helper()
	testenv.LookNode(t)
	p := newProject(t, nil)
	if err := os.Mkdir(p.path("lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("server.mjs", nodeServer)
	p.write("lib/helper.mjs", "export const answer = () => 'approved code';\n")
	p.write("mcpepoch.toml", "command = "+command+"\n\n[grants]\nproof = [\"same-user\"]\n")
	return p
}

// waitDrift waits for the host's identity_drift record and checks that it
// names what changed.
func waitDrift(t *testing.T, p *project, changed string) {
	t.Helper()
	rs := p.waitRecords("identity_drift record", func(rs []audit.Record) bool {
		return len(recordsOf(rs, audit.TypeIdentityDrift)) == 1
	})
	if d := recordsOf(rs, audit.TypeIdentityDrift)[0]; !strings.Contains(fieldJSON(d, "changed"), changed) {
		t.Errorf("identity_drift record does not name %s: %+v", changed, d.Fields)
	}
}

// A root entry (node server.mjs) loads ./lib/helper.mjs: that file is code
// of the epoch, so saving it while the epoch runs is drift, as saving the
// entry is.
func TestRootEntryImportedModuleDrifts(t *testing.T) {
	t.Parallel()
	p := newNodeProject(t, `["node", "server.mjs"]`)
	c := startRaw(t, p, nil, "node", "server.mjs")
	c.initialize()
	c.listTools()
	p.waitCatalog()
	p.write("lib/helper.mjs", "export const answer = () => 'unapproved code';\n")
	waitDrift(t, p, ".")
}

// npm start runs package.json's scripts.start: the identity follows it to
// node server.mjs, so an edit of the server's code is drift, not code that
// answers under the epoch of npm's own script.
func TestNpmStartEditDrifts(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	p := newNodeProject(t, `["npm", "start", "--silent"]`)
	p.write("package.json", `{"name": "srv", "private": true, "scripts": {"start": "node server.mjs"}}`+"\n")
	c := startRaw(t, p, nil, "npm", "start", "--silent")
	c.initialize()
	c.listTools()
	p.waitCatalog()
	p.write("lib/helper.mjs", "export const answer = () => 'unapproved code';\n")
	waitDrift(t, p, ".")
}

// npm start puts .npmrc's node-options in the script's NODE_OPTIONS:
// a line written there after the approval (a preload that lies outside
// the project, so that no code file of it changes) is drift, as an edit
// of the server's code is: the host audits identity_drift naming .npmrc,
// revokes the epoch's grants and refuses the granted call, and the
// preload runs only in the epoch a build starts, which no grant covers.
func TestNpmrcNodeOptionsDrifts(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	p := newNodeProject(t, `["npm", "start", "--silent"]`)
	p.write("package.json", `{"name": "srv", "private": true, "scripts": {"start": "node server.mjs"}}`+"\n")
	outside := t.TempDir()
	evil, ran := filepath.Join(outside, "evil.cjs"), filepath.Join(outside, "evil.ran")
	if err := os.WriteFile(evil, []byte("require('node:fs').writeFileSync("+strconv.Quote(ran)+", 'ran');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startRaw(t, p, nil, "npm", "start", "--silent")
	c.initialize()
	c.listTools()
	before := p.waitCatalog()
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")
	wantText(t, c.callWait("read", nil), "approved code")

	p.write(".npmrc", "node-options=--require "+evil+"\n")
	if st := p.status(); !strings.Contains(strings.Join(st.Drift, "\n"), ".npmrc") {
		t.Errorf("status drift %q, want .npmrc named", st.Drift)
	}
	waitDrift(t, p, ".npmrc")
	wantError(t, c.callWait("read", nil), host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
	if out, code := p.runCLI(nil, "approve", "--dir", p.dir, "--yes", "--tools", "read"); code == 0 {
		t.Fatalf("approve of the epoch whose .npmrc changed: exit 0\n%s", out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the preload .npmrc names ran under the approved epoch")
	}

	p.record()
	after := p.waitCatalog()
	if after.Execution.Epoch == before.Execution.Epoch {
		t.Fatalf("epoch %s still runs after .npmrc changed and a build", after.Execution.Epoch)
	}
	waitFor(t, waitLong, "the preload in the new epoch", func() bool { _, err := os.Stat(ran); return err == nil })
	wantError(t, c.callWait("read", nil), host.CodeAuthorizationRequired, "")
}

// A package.json script that reloads in-process (node --watch) is refused
// as the same command line is.
func TestNpmStartSelfReloadRefused(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	p := newNodeProject(t, `["npm", "start"]`)
	p.write("package.json", `{"name": "srv", "private": true, "scripts": {"start": "node --watch server.mjs"}}`+"\n")
	out, code := p.runCLI(nil, p.hostArgs(nil, "npm", "start")...)
	if code == 0 || !strings.Contains(out.Stderr, "reloads code in-process (node --watch)") || !strings.Contains(out.Stderr, "npm") {
		t.Fatalf("mcpepoch host -- npm start with scripts.start %q: exit %d, want a refusal naming node --watch\n%s", "node --watch server.mjs", code, out.Stderr)
	}
}

// A launch whose identity hashes no file of the project (a server whose
// code lies elsewhere, a launcher whose script is not followed) is refused
// at start, with the fix named; code = [...] in mcpepoch.toml is the fix.
func TestUncoveredLaunchRefused(t *testing.T) {
	t.Parallel()
	p := newNodeProject(t, `["node", "server.mjs"]`)
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "server.mjs"), []byte(nodeServer), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(elsewhere, "server.mjs")
	p.write("mcpepoch.toml", "command = [\"node\", \""+outside+"\"]\n")
	out, code := p.runCLI(nil, p.hostArgs(nil, "node", outside)...)
	if code == 0 || !strings.Contains(out.Stderr, "hashes no file of the project") || !strings.Contains(out.Stderr, "code = [") {
		t.Fatalf("mcpepoch host -- node %s: exit %d, want a refusal naming code = [...]\n%s", outside, code, out.Stderr)
	}
	if out, _ := p.runCLI(nil, "doctor", "--dir", p.dir); !strings.Contains(out.Stdout+out.Stderr, "hashes no file of the project") {
		t.Errorf("doctor does not report the uncovered launch:\n%s%s", out.Stdout, out.Stderr)
	}
}

// A self-reloading tool is refused wherever a script the launch goes
// through runs it, also where the launch cannot be followed to its code:
// a package.json script with shell syntax, a shell script whose last line
// is no exec (run in the background, or not last), a script it runs by
// path in turn.
func TestScriptSelfReloadRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		command []string
	}{
		{"package.json script with &&", map[string]string{
			"package.json": `{"name": "srv", "private": true, "scripts": {"start": "tsc && node --watch dist/server.js"}}` + "\n"},
			[]string{"npm", "start"}},
		{"package.json prestart", map[string]string{
			"package.json": `{"name": "srv", "private": true, "scripts": {"prestart": "node --watch server.mjs &", "start": "node server.mjs"}}` + "\n"},
			[]string{"npm", "start"}},
		{"shell script without exec", map[string]string{
			"run.sh": "#!/bin/sh\nset -e\nnode --watch server.mjs\n"},
			[]string{"sh", "run.sh"}},
		{"shell script in the background", map[string]string{
			"run.sh": "#!/bin/sh\nnode --watch server.mjs &\nwait\n"},
			[]string{"sh", "run.sh"}},
		{"script a script runs", map[string]string{
			"run.sh": "#!/bin/sh\n./dev.sh\necho done\n", "dev.sh": "#!/bin/sh\nexec node --watch server.mjs\n"},
			[]string{"sh", "run.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(tc.command[0]); err != nil {
				testenv.Missing(t, tc.command[0]+" is not on PATH: install node and npm to run this test")
			}
			p := newNodeProject(t, `["`+strings.Join(tc.command, `", "`)+`"]`)
			for name, content := range tc.files {
				p.write(name, content)
				if strings.HasSuffix(name, ".sh") {
					if err := os.Chmod(p.path(name), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, code := p.runCLI(nil, p.hostArgs(nil, tc.command...)...)
			if code == 0 || !strings.Contains(out.Stderr, "reloads code in-process (node --watch)") || !strings.Contains(out.Stderr, tc.command[0]) {
				t.Fatalf("mcpepoch host -- %q: exit %d, want a refusal naming node --watch\n%s", tc.command, code, out.Stderr)
			}
		})
	}
}
