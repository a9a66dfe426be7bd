package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
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
