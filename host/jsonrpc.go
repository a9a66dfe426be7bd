package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
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

// idKey turns a JSON-RPC id into a map key by value, so that a peer that
// re-encodes an id ("\u0041" as "A", 1.0 as 1, 1e2 as 100) is still
// matched; strings and numbers never collide ("1" vs 1).
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if r, ok := numberRat(id); ok {
			return "n" + r.RatString()
		}
	}
	return "r" + string(id)
}

// numberRat reads a JSON number exactly. Numbers longer than 64 bytes or
// with an exponent beyond ±400 are not read (1e1000000000 would take
// gigabytes as an exact value).
func numberRat(n []byte) (*big.Rat, bool) {
	if len(n) > 64 {
		return nil, false
	}
	if i := bytes.IndexAny(n, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(string(n[i+1:]), "+"))
		if err != nil || exp > 400 || exp < -400 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(string(n))
}

// maxExactID is the largest integer every JSON implementation holds
// exactly, 2^53.
var maxExactID = new(big.Int).Lsh(big.NewInt(1), 53)

// clientMembers are the envelope members the host reads from a client
// message; tools/call's params members follow.
var (
	clientMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	callMembers   = []string{"name", "arguments", "_meta"}
)

// ProtocolError is a client message the host refuses to read: one the host
// might read differently from the server (a member named twice, or in
// another case, as Go's encoding/json would match it but servers do not),
// or an id of a type JSON-RPC does not allow.
type ProtocolError struct {
	Code int // -32600 invalid request or -32602 invalid params
	Msg  string
}

func (e *ProtocolError) Error() string { return e.Msg }

// parseClient reads a client message strictly (JSON-RPC 2.0 §4, §5): member
// names match exactly, as the servers match them, and a member the host
// reads must appear once and in no other case; the id must be a string, a
// number or null; for tools/call, params must be an object whose name is a
// string. What the host cannot read the way the server will is refused,
// never forwarded unchecked (every tools/call passes the grant and catalog
// checks).
func parseClient(line []byte) (*message, error) {
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	if !json.Valid(line) {
		return nil, fmt.Errorf("not valid JSON")
	}
	members, err := strictObject(line, clientMembers)
	if err != nil {
		return nil, &ProtocolError{Code: -32600, Msg: "invalid request: " + err.Error()}
	}
	m := &message{ID: members["id"], Params: members["params"]}
	_, m.Result = members["result"]
	_, m.Error = members["error"]
	if raw, ok := members["method"]; ok {
		if err := json.Unmarshal(raw, &m.Method); err != nil {
			return nil, &ProtocolError{Code: -32600, Msg: "invalid request: method is not a string"}
		}
	}
	if id := bytes.TrimSpace(m.ID); len(id) > 0 {
		switch c := id[0]; {
		case c == '"', bytes.Equal(id, []byte("null")):
		case c == '-', c >= '0' && c <= '9':
			// JSON-RPC 2.0 §4: numbers SHOULD NOT have fractional parts.
			// Servers re-encode ids they cannot hold exactly (0.5, 1e400,
			// 2^64), and an answer under another id never reaches the
			// client: refuse what is not an integer of at most 2^53.
			r, ok := numberRat(id)
			if !ok || !r.IsInt() || r.Num().CmpAbs(maxExactID) > 0 {
				return nil, &ProtocolError{Code: -32600, Msg: "invalid request: a numeric id must be an integer between -2^53 and 2^53"}
			}
		default:
			return nil, &ProtocolError{Code: -32600, Msg: "invalid request: id must be a string, a number or null"}
		}
	}
	if m.Method == "tools/call" && m.isRequest() {
		params, err := strictObject(m.Params, callMembers)
		if err != nil {
			return m, &ProtocolError{Code: -32602, Msg: "invalid params: tools/call params: " + err.Error()}
		}
		var name string
		if json.Unmarshal(params["name"], &name) != nil || name == "" {
			return m, &ProtocolError{Code: -32602, Msg: "invalid params: tools/call params.name must be a non-empty string"}
		}
	}
	return m, nil
}

// strictObject decodes the JSON object b into its members by exact name.
// It fails when b is not one object, or when a member named in watch
// appears twice or under a name differing from it only in case.
func strictObject(b []byte, watch []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := t.(string)
		for _, w := range watch {
			if key != w && strings.EqualFold(key, w) {
				return nil, fmt.Errorf("member %q: only %q is read, a name differing in case is refused", key, w)
			}
		}
		if _, dup := out[key]; dup && slices.Contains(watch, key) {
			return nil, fmt.Errorf("member %q appears twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the object")
	}
	return out, nil
}

// replaceID returns line with its top-level id set to id.
func replaceID(line []byte, id json.RawMessage) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return nil, err
	}
	msg["id"] = id
	return json.Marshal(msg)
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
