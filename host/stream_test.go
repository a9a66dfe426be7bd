package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// A server that writes a banner and a cut-off line on stdout: the client
// sees only JSON-RPC messages and the session goes on.
func TestStdoutNoiseDropped(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_BANNER": "fixture v1 starting, not JSON"})
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools() // the fixture writes its cut-off line after this answer
	for range 3 {
		wantText(t, c.callWait("version", nil), "revision=A")
	}
	// Both lines reached the host, which dropped them.
	waitFor(t, waitLong, "the host to drop both lines", func() bool {
		return strings.Count(c.stderr.String(), "dropped a stdout line that is not JSON-RPC") == 2
	})
	wantText(t, c.callWait("version", nil), "revision=A")
	if bad := c.invalidLines(); len(bad) != 0 {
		t.Errorf("the host wrote lines that are not JSON-RPC messages: %q", bad)
	}
}

// A client request id in the host's private namespace is refused, and the
// session goes on.
func TestReservedID(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	for _, id := range []string{"mcpepoch:1", "mcpepoch:" + strings.Repeat("x", 40)} {
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": "version", "arguments": map[string]any{}}})
		key := fmt.Sprintf("%q", id)
		r := c.response(key, waitLong)
		wantError(t, r, host.CodeReservedID, "reserved_id:")
		wantNext(t, r, "send it again under another id")
		wantText(t, c.callWait("version", nil), "revision=A")
		if n := len(c.responses(key)); n != 1 {
			t.Errorf("%d responses to id %s, want 1", n, key)
		}
	}
	// Other string ids pass.
	c.send(map[string]any{"jsonrpc": "2.0", "id": "mcpepoch", "method": "tools/call",
		"params": map[string]any{"name": "version", "arguments": map[string]any{}}})
	wantText(t, c.response(`"mcpepoch"`, waitLong), "revision=A")
}

// Messages over --max-message are refused with message_too_large in both
// directions, answered under their id, and the session goes on.
func TestMaxMessage(t *testing.T) {
	t.Parallel()
	const max = 64 << 10
	flags := []string{"--max-message", fmt.Sprint(max)}

	t.Run("client-to-server", func(t *testing.T) {
		p := newProject(t, nil)
		c := startRaw(t, p, flags)
		c.initialize()
		big := strings.Repeat("x", 2*max)
		// Numeric and string ids; id first as SDKs write it, and last.
		id := c.call("version", map[string]any{"pad": big})
		r := c.response(id, waitLong)
		wantError(t, r, host.CodeMessageTooLarge, "message_too_large:")
		wantNext(t, r, "send a smaller message", "--max-message BYTES", "mcpepoch host --max-message")
		c.sendLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"version","arguments":{"pad":%q}},"id":"tail"}`, big))
		wantError(t, c.response(`"tail"`, waitLong), host.CodeMessageTooLarge, "message_too_large:")
		wantText(t, c.callWait("version", map[string]any{"pad": strings.Repeat("x", max/2)}), "revision=A")
		if n := len(c.responses(id)); n != 1 {
			t.Errorf("%d responses, want 1", n)
		}
	})

	t.Run("server-to-client", func(t *testing.T) {
		p := newProject(t, nil)
		copyFile(t, buildServer(t, "host/testdata/bigserver"), p.path("bin/bigserver"))
		c := startRaw(t, p, flags, "./bin/bigserver")
		c.initialize()
		id := c.call("big", map[string]any{"bytes": 2 * max})
		r := c.response(id, waitLong)
		wantError(t, r, host.CodeMessageTooLarge, "message_too_large:")
		wantNext(t, r, "only its answer is lost", "--max-message BYTES")
		r = c.callWait("big", map[string]any{"bytes": max / 2})
		if r.Error != nil || len(r.text()) != max/2 {
			t.Fatalf("a result under the limit: %.200s", r)
		}
		if n := len(c.responses(id)); n != 1 {
			t.Errorf("%d responses, want 1", n)
		}
	})
}

// A line that is not JSON gets a parse error with id null, not silence,
// and the session goes on.
func TestClientGarbage(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	c.sendLine([]byte(`{"jsonrpc":"2.0","id":`))
	r := c.response("null", waitLong)
	wantError(t, r, -32700, "parse error")
	wantNext(t, r, "send one JSON-RPC 2.0 message per line")
	wantText(t, c.callWait("version", nil), "revision=A")
}
