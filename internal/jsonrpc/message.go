package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Standard error codes (JSON-RPC 2.0 §5.1).
const (
	CodeParseError     = -32700 // the line is not JSON
	CodeInvalidRequest = -32600 // the JSON is not a valid request
	CodeInvalidParams  = -32602 // the method's params are invalid
)

// Message is the envelope of one JSON-RPC message: its id and method and
// whether it carries a result or an error. Everything else stays in the
// line it was read from.
type Message struct {
	ID        json.RawMessage // absent: nil; may be the JSON null
	Method    string
	Params    json.RawMessage
	HasResult bool // a "result" member exists
	HasError  bool // an "error" member exists
}

// present records that a member exists without keeping its value.
type present bool

func (p *present) UnmarshalJSON([]byte) error { *p = true; return nil }

// HasID reports whether id is present and not null.
func HasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// IsRequest, IsNotification and IsResponse classify m (JSON-RPC 2.0 §4,
// §5): a request has a method and an id, a notification a method and no id
// (or id null), a response an id and no method.
func (m *Message) IsRequest() bool      { return m.Method != "" && HasID(m.ID) }
func (m *Message) IsNotification() bool { return m.Method != "" && !HasID(m.ID) }
func (m *Message) IsResponse() bool     { return m.Method == "" && HasID(m.ID) }

// Parse reads the envelope of line leniently (encoding/json matching). It
// fails on anything that is not a JSON object.
func Parse(line []byte) (*Message, error) {
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result present         `json:"result"`
		Error  present         `json:"error"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	return &Message{ID: m.ID, Method: m.Method, Params: m.Params, HasResult: bool(m.Result), HasError: bool(m.Error)}, nil
}

// IsBatch reports whether line is a JSON-RPC batch: an array (JSON-RPC 2.0
// §6).
func IsBatch(line []byte) bool {
	i := skipSpace(line, 0)
	return i < len(line) && line[i] == '['
}

// ReplaceID returns line with its top-level id set to id; every other byte
// stays as the peer wrote it ([SetMember]).
func ReplaceID(line []byte, id json.RawMessage) ([]byte, error) {
	return SetMember(line, id, "id")
}

// LenientID returns the id of a refused line when it can be read by its
// exact member name and is of a type JSON-RPC allows (a string or a
// number), so that the refusal reaches the request it answers; else nil,
// which [ErrorLine] sends as id null.
func LenientID(line []byte) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return nil
	}
	id := bytes.TrimSpace(members["id"])
	if len(id) == 0 {
		return nil
	}
	if c := id[0]; c == '"' || c == '-' || (c >= '0' && c <= '9') {
		return id
	}
	return nil
}
