// The server's side of the handshake: bounded, and a server that frames its messages another way named.

package host

import (
	"bytes"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// ReasonHandshake is error.data.reason of the server_unavailable answer
// to a client initialize the server did not answer: it never did within
// Options.InitTimeout, or it frames its messages as LSP does.
const ReasonHandshake = "handshake_failed"

// lspFraming names a server that writes Content-Length headers.
const lspFraming = "this server uses LSP-style framing; MCP's stdio transport is newline-delimited JSON"

// askedLocked notes that the client's initialize (id) was sent to child
// c, and bounds its answer: once Options.InitTimeout has passed with it
// unanswered, the client gets server_unavailable naming the cause, never
// a wait without end (a direct client would see the server hang; the
// host names it).
func (h *Host) askedLocked(c *child, id []byte) {
	c.asked = true
	k := jsonrpc.IDKey(id)
	if c.lsp {
		h.handshakeFailedLocked(c, k, lspFraming, lspFix()) // it said so before the client asked
		return
	}
	time.AfterFunc(h.opts.InitTimeout, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !c.answered {
			h.handshakeFailedLocked(c, k, fmt.Sprintf("the server did not answer initialize within %s", h.opts.InitTimeout),
				"make the server answer initialize, or give it longer with host.init_timeout in mcpepoch.toml (its stderr is in "+selfcmd.Cmd("status")+"); then rebuild it, or run "+selfcmd.Cmd("restart")+", and reconnect the client")
		}
	})
}

// lspFix is what to do about a server that frames as LSP does.
func lspFix() string {
	return "make the server write one JSON-RPC message per line, with no Content-Length header; then rebuild it, or run " + selfcmd.Cmd("restart") + ", and reconnect the client"
}

// handshakeFailedLocked answers the client's initialize in flight at
// child c (under key k; any, when k is empty) with server_unavailable
// naming cause, and fix, what to do about it; and logs and audits it. The
// server keeps running: the next build or restart replaces it.
func (h *Host) handshakeFailedLocked(c *child, k, cause, fix string) {
	for key, cl := range h.inflight {
		if cl.method != "initialize" || cl.child != c || k != "" && key != k {
			continue
		}
		delete(h.inflight, key)
		c.handshake = cause
		h.logf("epoch %s: %s: answering the client's initialize with an error", c.epoch, cause)
		h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{"reason": "handshake: " + cause})
		h.toClient(jsonrpc.ErrorLine(cl.id, CodeServerUnavailable, "server_unavailable ("+ReasonHandshake+"): "+cause+"; the request was answered by the host: "+fix,
			map[string]any{"reason": ReasonHandshake, "method": cl.method, "requestId": cl.id, "epoch": c.epoch, "detail": cause}))
	}
}

// lspHeader reports whether line, which is not JSON-RPC, is an LSP
// base-protocol header ("Content-Length: 123", any case).
func lspHeader(line []byte) bool {
	const h = "content-length:"
	return len(line) >= len(h) && bytes.EqualFold(line[:len(h)], []byte(h))
}

// lspFramedLocked names a server of child c that wrote a Content-Length
// header, once, and ends the client's wait for its initialize at once.
func (h *Host) lspFramedLocked(c *child) {
	if !c.lsp {
		c.lsp = true
		h.logf("epoch %s: the server wrote a Content-Length header: %s", c.epoch, lspFraming)
	}
	if !c.answered {
		h.handshakeFailedLocked(c, "", lspFraming, lspFix())
	}
}
