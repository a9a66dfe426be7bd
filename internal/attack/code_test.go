package attack_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The code scenarios run confined only: what the agent does (write the
// project, its temp directory, run mcpepoch restart) it does as well
// unconfined, and what stops it is the host's, outside the sandbox.

// lazyServer is testdata/servers/python/lazy.py, app/server.py: its tool
// read imports app.impl at its first call and answers with impl.run();
// ping answers pong.
func lazyServer(t testing.TB) string { return testenv.PythonServer(t, "lazy") }

// evilImpl is the agent's app/impl.py: it leaves evil.ran in the project
// when it runs.
const evilImpl = `import os
open(os.path.join(os.path.dirname(__file__), '..', 'evil.ran'), 'w').close()
def run():
    return 'unapproved code'
`

// TestEditUnderGrant: a person approved read; the agent rewrites a file
// of the hashed tree every 50 ms (a stream of change events that never
// pauses, as a long build writes too), then saves new code for read. The
// call right after the save is held until the identity is computed again
// and refused identity_drift, naming what starts an epoch on the new code
// (mcpepoch record or mcpepoch restart) for a person to approve: the
// agent's code never runs under the person's approval.
func TestEditUnderGrant(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	p := newProject(t)
	p.write("app/__init__.py", "")
	p.write("app/server.py", lazyServer(t))
	p.write("app/impl.py", "def run():\n    return 'approved code'\n")
	p.write("mcpepoch.toml", "command = [\"python3\", \"-m\", \"app.server\"]\n\n[grants]\nexempt = [\"ping\"]\n")
	s := connect(t, p, nil, "python3", "-m", "app.server")
	p.personApprove(s.run, "--tools", "read")

	a := newAgent(t, confined, p.dir)
	a.start(`while :; do : >app/__init__.py; sleep 0.05; done`)
	a.must(`sleep 0.5; cat >app/impl.py <<'EOF'
` + evilImpl + `EOF`)
	s.refused("read", nil, host.CodeAuthorizationStale, "authorization_stale: identity_drift:", "mcpepoch record", "mcpepoch restart")
	if p.exists("evil.ran") {
		t.Fatal("the agent's code ran under the person's approval")
	}
	if text := s.text("ping", nil); text != "pong" {
		t.Errorf("the exempt tool answered %q", text)
	}
}

// inPlaceServer is a stdio MCP server in plain Python, srv.py. Its tool
// reload (exempt) answers, then execs in place (same pid, same pipes) the
// Python program at the path it is given; read answers "approved code".
const inPlaceServer = `import json, os, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
tools = [{"name": n, "description": n, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}} for n in ("read", "reload")]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "exec", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": tools})
    elif meth == "tools/call" and m["params"]["name"] == "read":
        ok({"content": [{"type": "text", "text": "approved code"}]})
    elif meth == "tools/call":
        ok({"content": [{"type": "text", "text": "reloading"}]})
        os.execv(sys.executable, [sys.executable, m["params"]["arguments"]["path"]])
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
`

// evilServer is the program the agent has the server exec: it answers
// every request, and leaves evil.ran in the project when it does.
const evilServer = `import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    open("evil.ran", "w").close()
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "unapproved code"}]}}) + "\n")
    sys.stdout.flush()
`

// TestExecInPlace: a person approved read. The agent writes a program
// into its temp directory, outside the project (no file of the hashed
// tree changes), and has the client call the server's exempt reload tool
// with it: the server execs it in place, same pid, same pipes. The next
// granted call is refused in_process_reload before it reaches the new
// image, and the host starts a new epoch for a person to approve.
func TestExecInPlace(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	p := newProject(t)
	p.write("srv.py", inPlaceServer)
	p.write("mcpepoch.toml", "command = [\"python3\", \"srv.py\"]\n\n[grants]\nexempt = [\"reload\"]\n")
	s := connect(t, p, nil, "python3", "srv.py")
	p.personApprove(s.run, "--tools", "read")
	if text := s.text("read", nil); text != "approved code" {
		t.Fatalf("read under the person's grant: %q", text)
	}
	a := newAgent(t, confined, p.dir)
	a.must(`cat >"$TMPDIR/evil.py" <<'EOF'
` + evilServer + `EOF`)
	pid := p.status(s.run).Execution.ProcessID
	if text := s.text("reload", map[string]any{"path": filepath.Join(a.tmp, "evil.py")}); text != "reloading" {
		t.Fatalf("reload: %q", text)
	}
	waitFor(t, "the server to exec the agent's program", func() bool {
		b, _ := os.ReadFile("/proc/" + itoa(pid) + "/cmdline")
		return strings.Contains(string(b), "evil.py")
	})
	s.refused("read", nil, host.CodeAuthorizationStale, "authorization_stale: in_process_reload:", "a person runs mcpepoch approve")
	if p.exists("evil.ran") {
		t.Fatal("the program the server exec'd in place answered under the person's approval")
	}
}

// gatedServer is a stdio MCP server in plain Python, srv.py, that writes
// $GATE/waiting-PID, starts only once $GATE/go exists and then imports
// lib (X), writing $GATE/loaded-PID after the import; it reads its first
// message only once $GATE/restored exists. Its tool read answers with
// lib's X. The gates stand for the agent's luck: they let the test run
// the race the agent would have to win (put the file back before the
// host checks the launch, which it does at the server's first message),
// every time.
const gatedServer = `import json, os, sys, time
gate = os.environ["GATE"]
def wait(name):
    while not os.path.exists(os.path.join(gate, name)):
        time.sleep(0.02)
open(os.path.join(gate, "waiting-%d" % os.getpid()), "w").close()
wait("go")
from lib import X
open(os.path.join(gate, "loaded-%d" % os.getpid()), "w").close()
wait("restored")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "gated", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": [{"name": "read", "description": "read", "inputSchema": {"type": "object", "properties": {}}}]})
    elif meth == "tools/call":
        ok({"content": [{"type": "text", "text": "X=" + X}]})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
`

// TestSwapRestore: the agent runs mcpepoch restart and, once the host has
// hashed the new launch and its server waits to load lib.py, swaps lib.py
// for its own, lets the server load it, and puts the original back before
// the host checks the launch: every digest is as it was. The host
// compares the device, inode and ctime of every hashed file with what
// they were at hash time, does not use that epoch, and starts another on
// the code that is there: what the person then approves answers X=good,
// never the swap.
func TestSwapRestore(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	p := newProject(t)
	p.write("srv.py", gatedServer)
	p.write("lib.py", "X = 'good'\n")
	p.write("mcpepoch.toml", "command = [\"python3\", \"srv.py\"]\n")
	a := newAgent(t, confined, p.dir)
	gate := filepath.Join(a.tmp, "gate")
	if err := os.Mkdir(gate, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go", "restored"} {
		if err := os.WriteFile(filepath.Join(gate, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No bytecode: the swapped lib.py's would be a change the host sees
	// anyway, and the test would not tell whether it saw the swap.
	s := connect(t, p, []string{"GATE=" + gate, "PYTHONDONTWRITEBYTECODE=1"}, "python3", "srv.py")
	p.personApprove(s.run, "--tools", "read")
	if text := s.text("read", nil); text != "X=good" {
		t.Fatalf("read under the person's grant: %q", text)
	}

	out := a.must(`G="$TMPDIR/gate"
within() { i=0; until eval "$1"; do [ $i -lt 2000 ] || { echo "gave up waiting for $1"; exit 1; }; sleep 0.01; i=$((i+1)); done; }
rm -f "$G"/go "$G"/restored "$G"/waiting-* "$G"/loaded-*
"$MCPEPOCH_BIN" restart >"$TMPDIR/restart.out" 2>&1 &
within 'ls "$G"/waiting-* >/dev/null 2>&1'
pid=$(ls "$G" | sed -n 's/^waiting-//p' | head -n 1)
mv lib.py lib.py.orig
printf "X = 'swap'\n" >lib.py
: >"$G/go"
within '[ -e "$G/loaded-$pid" ]'
mv lib.py.orig lib.py
: >"$G/restored"
wait
cat "$TMPDIR/restart.out"
echo "swapped pid $pid"`)
	m := regexp.MustCompile(`swapped pid (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the agent's swap:\n%s", out)
	}
	swapped, _ := atoi(m[1])
	st := p.ready(s.run)
	if st.Execution.ProcessID == swapped {
		t.Fatalf("the epoch whose server loaded the agent's lib.py is used (pid %d)\n%s", swapped, out)
	}
	s.refused("read", nil, host.CodeAuthorizationStale, "authorization_stale:", "mcpepoch approve")
	p.personApprove(s.run, "--tools", "read")
	if text := s.text("read", nil); text != "X=good" {
		t.Fatalf("read under the person's new grant: %q, want X=good", text)
	}
}

// nodeServer is a stdio MCP server in plain node, server.mjs, whose tool
// read answers with what ./lib/helper.mjs (imported at start) returns.
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

// evilHelper is the agent's lib/helper.mjs: its answer leaves evil.ran in
// the project.
const evilHelper = `import { writeFileSync } from "node:fs";
export const answer = () => { writeFileSync("evil.ran", ""); return "unapproved code"; };
`

// TestEditOutsideTheEntry: a person approved read of a node server; the
// agent edits code that the launch command does not name: a module the
// root entry imports (node server.mjs loads ./lib/helper.mjs), and the
// start script npm start runs (package.json's scripts.start). Each is
// code of the epoch: the next granted call is refused identity_drift,
// naming what starts an epoch on the new code, and the agent's code never
// answers under the person's approval.
func TestEditOutsideTheEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		command []string
		edit    string // the agent's shell script
	}{
		{"an import of the root entry", []string{"node", "server.mjs"}, `cat >lib/helper.mjs <<'EOF'
` + evilHelper + `EOF`},
		{"npm start's script", []string{"npm", "start", "--silent"}, `sed 's#./lib/helper.mjs#./lib/evil.mjs#' server.mjs >evil.mjs
cat >lib/evil.mjs <<'EOF'
` + evilHelper + `EOF
sed -i 's#node server.mjs#node evil.mjs#' package.json`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testenv.LookNode(t)
			p := newProject(t)
			p.write("server.mjs", nodeServer)
			p.write("lib/helper.mjs", "export const answer = () => 'approved code';\n")
			p.write("package.json", `{"name": "srv", "private": true, "scripts": {"start": "node server.mjs"}}`+"\n")
			p.write("mcpepoch.toml", `command = ["`+strings.Join(c.command, `", "`)+`"]`+"\n")
			s := connect(t, p, nil, c.command...)
			p.personApprove(s.run, "--tools", "read")
			if text := s.text("read", nil); text != "approved code" {
				t.Fatalf("read under the person's grant: %q", text)
			}
			newAgent(t, confined, p.dir).must(c.edit)
			s.refused("read", nil, host.CodeAuthorizationStale, "authorization_stale: identity_drift:", "mcpepoch record", "mcpepoch restart")
			if p.exists("evil.ran") {
				t.Fatal("the agent's code answered under the person's approval")
			}
		})
	}
}

// TestUncoveredLaunch: the agent writes a server into its temp directory,
// outside the project, and has the client's entry launch it (an agent can
// edit a project's client config). Its identity would hash no file of the
// project, so edits to it would never be seen: the host refuses to start,
// naming the fix (code = [...] in mcpepoch.toml, which the floor's person
// then reviews).
func TestUncoveredLaunch(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	p := newProject(t)
	p.write("mcpepoch.toml", "[grants]\nexempt = []\n")
	a := newAgent(t, confined, p.dir)
	a.must(`mkdir -p "$TMPDIR/lib" && cat >"$TMPDIR/server.mjs" <<'EOF'
` + nodeServer + `EOF
cat >"$TMPDIR/lib/helper.mjs" <<'EOF'
` + evilHelper + `EOF`)
	out, code := p.cli(nil, "host", "--dir", p.dir, "--", "node", filepath.Join(a.tmp, "server.mjs"))
	if code == 0 {
		t.Fatalf("a host ran the agent's server from its temp directory:\n%s", out)
	}
	wantIn(t, "the host's refusal", out.Stderr, "hashes no file of the project", "code = [")
}
