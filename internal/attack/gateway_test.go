package attack_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestServerOutsideGateway is what no gateway stops: the agent runs the
// server's code itself, speaking MCP to it on a pipe, and calls the tool
// that the host refuses without a person's grant. It answers, with no
// grant and no audit record; the host's guarantees cover the calls that
// go through mcpepoch host. Confined or not: the sandbox lets the agent
// run what it can read (without network, and with no secret: the broker
// serves only the servers a host launched).
func TestServerOutsideGateway(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	for _, where := range []confinement{confined, unconfined} {
		t.Run(where.String(), func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			p.write("app/__init__.py", "")
			p.write("app/server.py", lazyServer(t))
			p.write("app/impl.py", "def run():\n    return 'ran with no grant'\n")
			p.write("mcpepoch.toml", "command = [\"python3\", \"-m\", \"app.server\"]\n\n[grants]\nexempt = [\"ping\"]\n")
			s := connect(t, p, nil, "python3", "-m", "app.server")
			s.refused("read", nil, host.CodeAuthorizationRequired, "authorization_required:", "mcpepoch approve")
			before := len(p.records())

			out := newAgent(t, where, p.dir).must(`printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{}}}' | python3 -m app.server`)
			if !strings.Contains(out, "ran with no grant") {
				t.Fatalf("the agent (%s) running the server itself: %s", where, out)
			}
			if recs := p.records(); len(recs) != before || len(ofType(recs, audit.TypeToolCalled)) != 0 {
				t.Errorf("the audit log changed when the agent ran the server outside the host: %d records, was %d", len(recs), before)
			}
		})
	}
}
