package host_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// A server that frames its messages with Content-Length headers (LSP)
// is named, and the client's initialize is answered with
// server_unavailable saying so, not left waiting.
func TestHandshakeLSPFraming(t *testing.T) {
	t.Parallel()
	p := drainProject(t, "")
	p.write("lsp.sh", "#!/bin/sh\nprintf 'Content-Length: 52\\r\\n\\r\\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"capabilities\":{}}}'\nexec sleep 600\n")
	c := startRaw(t, p, nil, "sh", "./lsp.sh")
	id := c.request("initialize", map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	r := c.response(id, waitLong)
	wantError(t, r, host.CodeServerUnavailable, "server_unavailable (handshake_failed):")
	waitFor(t, waitLong, "the host to listen", func() bool { return strings.Contains(c.stderr.String(), "listening on") })
	if !strings.Contains(r.Error.Message, "LSP-style framing; MCP's stdio transport is newline-delimited JSON") {
		t.Errorf("the error does not name the framing: %q", r.Error.Message)
	}
	if s := p.status(); s.State != "starting" || !strings.Contains(s.Reason, "LSP-style framing") {
		t.Errorf("status says %q (reason %q), want starting, naming the framing: the server never answered", s.State, s.Reason)
	}
}

// A server that never answers initialize gets host.init_timeout: the
// client's initialize is then answered with server_unavailable naming
// the cause, and status says starting meanwhile and after.
func TestHandshakeNoAnswer(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `init_timeout = "2s"`)
	p.write("silent.sh", "#!/bin/sh\nexec cat >/dev/null\n")
	c := startRaw(t, p, nil, "sh", "./silent.sh")
	id := c.request("initialize", map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	waitFor(t, waitLong, "the host to listen", func() bool { return strings.Contains(c.stderr.String(), "listening on") })
	p.waitState("starting", waitLong)
	r := c.response(id, waitLong)
	wantError(t, r, host.CodeServerUnavailable, "server_unavailable (handshake_failed): the server did not answer initialize within 2s")
	if s := p.status(); s.State != "starting" {
		t.Errorf("status says %q, want starting", s.State)
	}
}
