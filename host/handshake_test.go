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
	wantNext(t, r, "write one JSON-RPC message per line", "mcpepoch restart")
	waitFor(t, waitLong, "the host to listen", func() bool { return strings.Contains(c.stderr.String(), "listening on") })
	if !strings.Contains(r.Error.Message, "LSP-style framing; MCP's stdio transport is newline-delimited JSON") {
		t.Errorf("the error does not name the framing: %q", r.Error.Message)
	}
	if s, code := p.statusCode(); s.State != "starting" || !strings.Contains(s.Reason, "LSP-style framing") || code != 4 {
		t.Errorf("status says %q (reason %q), exit %d; want starting, naming the framing, exit 4: the server never answered", s.State, s.Reason, code)
	}
}

// A server that never answers initialize gets host.init_timeout: the
// client's initialize is then answered with server_unavailable naming
// the cause, and status says starting meanwhile (exit 6) and after (exit
// 4, with the cause).
func TestHandshakeNoAnswer(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `init_timeout = "2s"`)
	p.write("silent.sh", "#!/bin/sh\nexec cat >/dev/null\n")
	c := startRaw(t, p, nil, "sh", "./silent.sh")
	id := c.request("initialize", map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	waitFor(t, waitLong, "the host to listen", func() bool { return strings.Contains(c.stderr.String(), "listening on") })
	p.waitState("starting", waitLong)
	if s, code := p.statusCode(); s.State == "starting" && s.Reason == "" && code != 6 {
		t.Errorf("status of a host still starting: exit %d, want 6", code)
	}
	r := c.response(id, waitLong)
	wantError(t, r, host.CodeServerUnavailable, "server_unavailable (handshake_failed): the server did not answer initialize within 2s")
	wantNext(t, r, "host.init_timeout in mcpepoch.toml", "mcpepoch restart")
	if s, code := p.statusCode(); s.State != "starting" || code != 4 {
		t.Errorf("status says %q, exit %d; want starting, exit 4", s.State, code)
	}
}

// A client that sends notifications/initialized before the answer to its
// initialize (as a client that pipelines does) still has the host list
// the server's catalog once the server has answered: the listing the
// notification asked for found no capabilities yet.
func TestInitializedBeforeAnswerListsCatalog(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.server("sleep 0.5\n", nil) // the notification reaches the host before the server answers
	c := startRaw(t, p, nil)
	id := c.request("initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "pipelining", "version": "0"},
	})
	c.notify("notifications/initialized", nil)
	if r := c.response(id, waitLong); r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	waitFor(t, waitLong, "the host to list the catalog", func() bool { return p.status().Catalog != "" })
}
