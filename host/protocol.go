package host

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Error codes of the host's own JSON-RPC errors. They lie outside the range
// JSON-RPC reserves (-32768…-32000), as MCP 2026-07-28 asks of new
// application codes, so they cannot be mistaken for the server's.
const (
	CodeServerRestarted   = -31001 // a forwarded request was caught in a restart or crash
	CodeServerUnavailable = -31002 // no server process can take the request
	CodeReservedID        = -31003 // the client used an id in the host's private namespace
	CodeMessageTooLarge   = -31004 // a message exceeded the line limit
)

// privatePrefix starts the string id of every request the host itself sends
// to a server. Client requests whose id starts with it are refused, so the
// two namespaces never collide.
const privatePrefix = "mcpepoch:"

// isPrivateID reports whether id is a string in the host's namespace.
func isPrivateID(id json.RawMessage) bool {
	// Only a string that starts so, or has an escape that may spell it,
	// is decoded: a JSON string without escapes decodes to its bytes (an
	// invalid UTF-8 byte to U+FFFD, never to ASCII).
	if b := bytes.TrimSpace(id); !bytes.HasPrefix(b, []byte(`"`+privatePrefix)) && bytes.IndexByte(b, '\\') < 0 {
		return false
	}
	var s string
	if json.Unmarshal(id, &s) != nil {
		return false
	}
	return len(s) >= len(privatePrefix) && s[:len(privatePrefix)] == privatePrefix
}

// serverCaps is what a server's initialize or server/discover result
// declared, of the lists the host announces.
type serverCaps struct {
	tools, prompts, resources bool
}

// advertiseListChanged rewrites an initialize or server/discover response
// line so that each list the server declared (capabilities.tools, prompts,
// resources) says listChanged: true: the host announces every epoch change
// of tools, and of prompts and resources when their lists changed. A
// capability the server did not declare is not added: a prompts-only
// server stays one. Only those members change; every other byte stays as
// the server wrote it. It also returns what was declared and the
// negotiated protocolVersion ("" for server/discover).
func advertiseListChanged(line []byte) ([]byte, serverCaps, string, error) {
	var caps serverCaps
	if !json.Valid(line) {
		return nil, caps, "", fmt.Errorf("initialize result: not valid JSON")
	}
	result, ok := jsonrpc.GetMember(line, "result")
	if !ok || len(result) == 0 || result[0] != '{' {
		return nil, caps, "", fmt.Errorf("initialize result: not an object")
	}
	var version string
	if raw, ok := jsonrpc.GetMember(line, "result", "protocolVersion"); ok {
		json.Unmarshal(raw, &version)
	}
	raw, ok := jsonrpc.GetMember(line, "result", "capabilities")
	if !ok || bytes.Equal(raw, []byte("null")) {
		return line, caps, version, nil
	}
	if raw[0] != '{' {
		return nil, caps, "", fmt.Errorf("initialize result capabilities: not an object")
	}
	out := line
	for _, list := range []struct {
		name string
		has  *bool
	}{{"tools", &caps.tools}, {"prompts", &caps.prompts}, {"resources", &caps.resources}} {
		c, ok := jsonrpc.GetMember(out, "result", "capabilities", list.name)
		if !ok || bytes.Equal(c, []byte("null")) {
			continue
		}
		if c[0] != '{' {
			return nil, caps, "", fmt.Errorf("initialize result capabilities.%s: not an object", list.name)
		}
		*list.has = true
		if v, _ := jsonrpc.GetMember(out, "result", "capabilities", list.name, "listChanged"); string(v) == "true" {
			continue
		}
		var err error
		if out, err = jsonrpc.SetMember(out, json.RawMessage("true"), "result", "capabilities", list.name, "listChanged"); err != nil {
			return nil, caps, "", err
		}
	}
	return out, caps, version, nil
}

// subscriptionID returns the idKey of params._meta's subscription id.
func subscriptionID(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(params, &p)
	return jsonrpc.IDKey(p.Meta[metaSubscriptionID])
}

// ackToolsListChanged rewrites a notifications/subscriptions/acknowledged
// line to say tools list_changed is honoured: the host sends it on every
// epoch change (MCP 2026-07-28 subscriptions/listen). Nothing else in the
// line changes.
func ackToolsListChanged(line []byte) []byte {
	out, err := jsonrpc.SetMember(line, json.RawMessage("true"), "params", "notifications", "toolsListChanged")
	if err != nil {
		return line
	}
	return out
}

// A dual-era client probes server/discover (MCP 2026-07-28) before it
// falls back to initialize on any error. Servers on handshake-era SDKs
// answer it with an error, or exit on a request that is not initialize.
// Such a server is marked handshake-era (h.handshakeEra) the first time
// either happens, and from then on the host answers the probe itself
// with -32601, as such a server would, and forwards nothing. An exit
// with the probe in flight is not a crash: the probe is answered -32601
// (the client falls back, never told server_restarted), and the server
// is started again under a new epoch without counting toward giving up.

// discoverUnsupported answers a server/discover probe for a handshake-era
// server.
func discoverUnsupported(id json.RawMessage) []byte {
	return jsonrpc.ErrorLine(id, jsonrpc.CodeMethodNotFound,
		"method not found: server/discover (this server speaks the initialize handshake; answered by mcpepoch host)", nil)
}

// probeExitLocked answers the server/discover requests in flight to child
// c, which exited, and reports whether there were any: c is then known
// handshake-era. h.mu is held.
func (h *Host) probeExitLocked(c *child) bool {
	probe := false
	for k, cl := range h.inflight {
		if cl.child == c && cl.method == "server/discover" {
			delete(h.inflight, k)
			h.toClient(discoverUnsupported(cl.id))
			probe = true
		}
	}
	if probe {
		h.handshakeEra = true
		h.logf("epoch %s: the server exited on the server/discover probe: it speaks the initialize handshake; the host answers the probe itself from now on", c.epoch)
	}
	return probe
}
