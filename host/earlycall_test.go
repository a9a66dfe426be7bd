package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// earlyCall initializes a raw client declaring form elicitation and sends
// notifications/initialized and a tools/call of name in one write, so that
// the call reaches the host before its own tools/list of the session's
// first catalog is answered. It returns the call's id.
func earlyCall(t *testing.T, c *raw, name string, args map[string]any) string {
	t.Helper()
	r := c.roundTrip("initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		"clientInfo":      map[string]any{"name": "mcpepoch-early-call", "version": "0.1.0"},
	})
	if r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 100, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	c.sendLine(append([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"), call...))
	return "100"
}

// TestEarlyCallHeldForCatalog: a call sent at once after initialize, before
// the host knows the catalog, is held until it does, then decided as any
// call: a call that needs a grant is held for an approval asked through
// the client (not refused at once), and a call of a tool the catalog lacks
// is refused unknown_tool by the host (not forwarded unchecked).
func TestEarlyCallHeldForCatalog(t *testing.T) {
	t.Parallel()
	t.Run("asks", func(t *testing.T) {
		t.Parallel()
		p := newGrantsProject(t, nil)
		c := startRaw(t, p, nil)
		id := earlyCall(t, c, "slow_write", map[string]any{"key": "early"})
		var ask *wire
		c.waitFor(waitLong, "an elicitation/create or the call's answer", func() bool {
			for _, m := range c.msgs {
				if m.Method == "elicitation/create" {
					ask = m
					return true
				}
			}
			return len(c.responsesLocked(id)) > 0
		})
		if ask == nil {
			t.Fatalf("the early call was answered without asking the client: %v", c.responses(id)[0])
		}
		if rs := c.responses(id); len(rs) != 0 {
			t.Fatalf("the early call was answered while the client was asked: %v", rs[0])
		}
		c.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(ask.ID), "result": map[string]any{"action": "decline"}})
		r := c.response(id, waitLong)
		wantError(t, r, host.CodeAuthorizationRequired, "authorization_required:")
		if !strings.Contains(string(r.Error.Data), `"outcome":"declined"`) {
			t.Fatalf("the held call's refusal: %v, want outcome declined", r)
		}
		if strings.Contains(c.stderr.String(), "pass unchecked") {
			t.Fatalf("the host says calls pass unchecked:\n%s", c.stderr.String())
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, nil)
		c := startRaw(t, p, nil)
		id := earlyCall(t, c, "no_such_tool", nil)
		wantError(t, c.response(id, waitLong), host.CodeUnknownTool, "unknown_tool:")
	})
}

// slowListServer is a stdio MCP server in plain Python whose tools/list
// answers after two seconds; each tools/call of its tool "note" appends
// the call's id to the file calls.
const slowListServer = `import json, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "slow", "version": "1"}})
    elif meth == "tools/list":
        time.sleep(2)
        ok({"tools": [{"name": "note", "description": "notes the call", "inputSchema": {"type": "object", "properties": {}}}]})
    elif meth == "tools/call":
        with open("calls", "a") as f:
            f.write(json.dumps(m["id"]) + "\n")
        ok({"content": [{"type": "text", "text": "noted"}]})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
`

// TestEarlyCallCancelled: a call held for the first catalog that the
// client cancels is never forwarded to the server, nor answered; a call
// sent after it is.
func TestEarlyCallCancelled(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	p := newProject(t, nil)
	p.write("srv.py", slowListServer)
	p.write("mcpepoch.toml", "command = [\"python3\", \"srv.py\"]\n\n[grants]\nexempt = [\"**\"]\n")
	c := startRaw(t, p, nil, "python3", "srv.py")
	if r := c.roundTrip("initialize", map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpepoch-early-cancel", "version": "0.1.0"}}); r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	c.sendLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"note","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100,"reason":"changed my mind"}}` + "\n" +
		`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"note","arguments":{}}}`))
	if r := c.response("101", waitLong); r.Error != nil {
		t.Fatalf("the call after the cancelled one: %v", r)
	}
	if got := p.read("calls"); got != "101\n" {
		t.Fatalf("calls the server received: %q, want only 101 (100 was cancelled while held for the catalog)", got)
	}
	if rs := c.responses("100"); len(rs) != 0 {
		t.Fatalf("the cancelled call was answered: %v", rs[0])
	}
}
