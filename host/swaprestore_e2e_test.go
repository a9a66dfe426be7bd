package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// gatedServer is a stdio MCP server in plain Python, srv.py, that writes
// $GATE/waiting-PID, starts only once $GATE/go exists and then imports
// lib (X), writing $GATE/loaded-PID after the import: a test can change lib.py while a
// launch it started waits, after the host computed that launch's
// identity. Its tool "read" answers with lib's X.
const gatedServer = `import json, os, sys, time
gate = os.environ["GATE"]
open(os.path.join(gate, "waiting-%d" % os.getpid()), "w").close()
while not os.path.exists(os.path.join(gate, "go")):
    time.sleep(0.02)
from lib import X
open(os.path.join(gate, "loaded-%d" % os.getpid()), "w").close()
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

// swapDuringLoad swaps lib.py while the launch of pid waits at the gate,
// lets it load the swapped code, and puts the original back: every digest
// is as it was, the server runs the swap.
func swapDuringLoad(t *testing.T, p *project, gate string, pid int) {
	t.Helper()
	lib := p.path("lib.py")
	if err := os.Rename(lib, lib+".orig"); err != nil {
		t.Fatal(err)
	}
	p.write("lib.py", "X = 'swap'\n") // as many bytes as the original
	if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "the server to load lib", func() bool {
		_, err := os.Stat(filepath.Join(gate, "loaded-"+strconv.Itoa(pid)))
		return err == nil
	})
	if err := os.Rename(lib+".orig", lib); err != nil {
		t.Fatal(err)
	}
}

// waitingPID waits for a server pid other than not to wait at the gate.
func waitingPID(t *testing.T, gate string, not int) int {
	t.Helper()
	pid := 0
	waitFor(t, waitLong, "a server to wait at the gate", func() bool {
		m, _ := filepath.Glob(filepath.Join(gate, "waiting-*"))
		for _, f := range m {
			if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "waiting-")); err == nil && n != not {
				pid = n
			}
		}
		return pid != 0
	})
	return pid
}

// A hashed file swapped just after the host hashed a launch and put back
// before its check leaves every digest as it was, but the server loaded
// the swapped code. The check compares the device, inode and ctime of
// every hashed file with what they were at hash time: that epoch is not
// used, a new one starts on the code that is there, and a granted call is
// answered by it, never by the swapped code. So for the session's first
// epoch and for one a restart starts.
func TestSwapRestoredBeforeCheck(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is not on PATH: install Python 3 to run this test")
	}
	for _, name := range []string{"first epoch", "restart"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, nil)
			gate := t.TempDir()
			p.write("srv.py", gatedServer)
			p.write("lib.py", "X = 'good'\n")
			p.write("mcpepoch.toml", "command = [\"python3\", \"srv.py\"]\n\n[grants]\nproof = [\"same-user\"]\n")
			if name == "restart" {
				if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := startRawEnv(t, p, []string{"GATE=" + gate}, nil, "python3", "srv.py")
			pid := waitingPID(t, gate, 0)
			if name == "first epoch" {
				swapDuringLoad(t, p, gate, pid)
				c.initialize()
				c.notify("notifications/initialized", nil)
			} else {
				c.initialize()
				c.notify("notifications/initialized", nil)
				p.waitCatalog()
				if err := os.Remove(filepath.Join(gate, "go")); err != nil {
					t.Fatal(err)
				}
				restart := p.background("restart", "--dir", p.dir)
				next := waitingPID(t, gate, pid)
				swapDuringLoad(t, p, gate, next)
				<-restart.done
				pid = next
			}
			st := p.waitCatalog()
			if st.Execution.ProcessID == pid {
				t.Fatalf("the epoch whose server loaded the swapped lib.py is used (pid %d)", pid)
			}
			p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")
			wantText(t, c.callWait("read", nil), "X=good")
		})
	}
}
