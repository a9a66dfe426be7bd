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
	var s string
	if json.Unmarshal(id, &s) != nil {
		return false
	}
	return len(s) >= len(privatePrefix) && s[:len(privatePrefix)] == privatePrefix
}

// advertiseListChanged rewrites an initialize response line so that its
// result says capabilities.tools.listChanged = true: the host emits
// notifications/tools/list_changed on every epoch change whatever the server
// supports. It also returns the negotiated protocolVersion. Members it does
// not touch keep their values.
func advertiseListChanged(line []byte) ([]byte, string, error) {
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, "", err
	}
	var result map[string]json.RawMessage
	if err := json.Unmarshal(resp["result"], &result); err != nil {
		return nil, "", fmt.Errorf("initialize result: %v", err)
	}
	var version string
	json.Unmarshal(result["protocolVersion"], &version)
	caps := map[string]json.RawMessage{}
	if raw, ok := result["capabilities"]; ok {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, "", fmt.Errorf("initialize result capabilities: %v", err)
		}
	}
	tools := map[string]json.RawMessage{}
	if raw, ok := caps["tools"]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, "", fmt.Errorf("initialize result capabilities.tools: %v", err)
		}
	}
	tools["listChanged"] = json.RawMessage("true")
	var err error
	if caps["tools"], err = json.Marshal(tools); err != nil {
		return nil, "", err
	}
	if result["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, "", err
	}
	if resp["result"], err = json.Marshal(result); err != nil {
		return nil, "", err
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, "", err
	}
	return append(out, '\n'), version, nil
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
// epoch change (MCP 2026-07-28 subscriptions/listen).
func ackToolsListChanged(line []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	var params map[string]json.RawMessage
	json.Unmarshal(msg["params"], &params)
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var notes map[string]json.RawMessage
	json.Unmarshal(params["notifications"], &notes)
	if notes == nil {
		notes = map[string]json.RawMessage{}
	}
	notes["toolsListChanged"] = json.RawMessage("true")
	params["notifications"], _ = json.Marshal(notes)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return out
}
