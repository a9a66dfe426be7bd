package host

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// message is what the host reads of a JSON-RPC message: its id and method and
// whether it carries a result or an error. The rest of the line is forwarded
// byte for byte.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result present         `json:"result"`
	Error  present         `json:"error"`
	Params json.RawMessage `json:"params"`
}

// present records that a member exists without keeping its value.
type present bool

func (p *present) UnmarshalJSON([]byte) error { *p = true; return nil }

func hasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// isRequest, isNotification and isResponse classify m (JSON-RPC 2.0 §4, §5).
func (m *message) isRequest() bool      { return m.Method != "" && hasID(m.ID) }
func (m *message) isNotification() bool { return m.Method != "" && !hasID(m.ID) }
func (m *message) isResponse() bool     { return m.Method == "" && hasID(m.ID) }

// parseMessage reads the envelope of line. It fails on anything that is not a
// JSON object.
func parseMessage(line []byte) (*message, error) {
	var m message
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// idKey turns a JSON-RPC id into a map key: strings and numbers never
// collide ("1" vs 1).
func idKey(id json.RawMessage) string {
	return string(bytes.TrimSpace(id))
}

// isPrivateID reports whether id is a string in the host's namespace.
func isPrivateID(id json.RawMessage) bool {
	var s string
	if json.Unmarshal(id, &s) != nil {
		return false
	}
	return len(s) >= len(privatePrefix) && s[:len(privatePrefix)] == privatePrefix
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// errorLine encodes a JSON-RPC error response to id, newline-terminated.
func errorLine(id json.RawMessage, code int, msg string, data any) []byte {
	if !hasID(id) {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg, data}})
	if err != nil {
		panic(err) // data is always built by this package from marshalable values
	}
	return append(b, '\n')
}

// resultLine encodes a JSON-RPC result response, newline-terminated.
func resultLine(id json.RawMessage, result any) []byte {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// requestLine encodes a request (id set) or notification (id nil).
func requestLine(id any, method string, params any) []byte {
	v := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		v["id"] = id
	}
	if params != nil {
		v["params"] = params
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
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
