package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Standard error codes (JSON-RPC 2.0 §5.1).
const (
	CodeParseError     = -32700 // the line is not JSON
	CodeInvalidRequest = -32600 // the JSON is not a valid request
	CodeMethodNotFound = -32601 // the method does not exist
	CodeInvalidParams  = -32602 // the method's params are invalid
)

// Message is the envelope of one JSON-RPC message: its id and method and
// whether it carries a result or an error. Everything else stays in the
// line it was read from.
type Message struct {
	ID        json.RawMessage // absent: nil; may be the JSON null
	Method    string
	Params    json.RawMessage
	Result    json.RawMessage // the result member's bytes, as read by Parse
	HasResult bool            // a "result" member exists
	HasError  bool            // an "error" member exists

	// Tool and Arguments are a tools/call request's params.name and
	// params.arguments (nil when absent), as ParseClient read them.
	Tool      string
	Arguments json.RawMessage
}

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

// Parse reads the envelope of line leniently, as encoding/json would
// match it (member names case-insensitively, the last of a name wins),
// without decoding anything else: params, result and error values are
// stepped over (scan.go), so a 1 MiB result costs a search for its
// quotes, not a parse. It fails on a line that is not one JSON object, on
// an id that is not valid JSON and on a method that is not a string.
// Values other than the id and method are checked for structure only.
func Parse(line []byte) (*Message, error) {
	if i := skipSpace(line, 0); i == len(line) || line[i] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	m := &Message{}
	var method []byte
	err := wholeObject(line, func(key, value []byte) {
		switch {
		case keyIs(key, "id", true):
			m.ID = value
		case keyIs(key, "method", true):
			if string(value) != "null" { // null leaves a string as it was
				method = value
			}
		case keyIs(key, "result", true):
			m.HasResult, m.Result = true, value
		case keyIs(key, "error", true):
			m.HasError = true
		case keyIs(key, "params", true):
			m.Params = value
		}
	})
	if err != nil {
		return nil, err
	}
	if len(m.ID) > 0 && !json.Valid(m.ID) {
		return nil, fmt.Errorf("id is not valid JSON")
	}
	if err := idKind(m.ID); err != nil {
		return nil, err
	}
	if method != nil {
		if m.Method, err = stringValue(method); err != nil {
			return nil, fmt.Errorf("method: %v", err)
		}
	}
	return m, nil
}

// idKind refuses an id that is not a string, a number or null (JSON-RPC
// 2.0 §4), or a string that is not valid UTF-8 (RFC 8259 §8.1: JSON text
// is UTF-8; encoding/json would replace the bytes, and an answer under
// the replaced id would match no request).
func idKind(id json.RawMessage) error {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"':
		if !utf8.Valid(id) {
			return fmt.Errorf("id is not valid UTF-8")
		}
	case c == '-', c >= '0' && c <= '9', bytes.Equal(id, []byte("null")):
	default:
		return fmt.Errorf("id must be a string, a number or null")
	}
	return nil
}

// stringValue decodes a JSON string value; null is "" (encoding/json
// leaves a string unset).
func stringValue(v []byte) (string, error) {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && validPlain(v[1:len(v)-1]) {
		if s, ok := commonMethod(v[1 : len(v)-1]); ok {
			return s, nil // no copy per message
		}
		return string(v[1 : len(v)-1]), nil
	}
	if string(v) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", err
	}
	return s, nil
}

// commonMethod returns the method named by b when it is one most messages
// carry, as a constant, so that reading it allocates nothing.
func commonMethod(b []byte) (string, bool) {
	switch string(b) {
	case "tools/call":
		return "tools/call", true
	case "tools/list":
		return "tools/list", true
	case "ping":
		return "ping", true
	case "notifications/progress":
		return "notifications/progress", true
	case "notifications/message":
		return "notifications/message", true
	case "notifications/cancelled":
		return "notifications/cancelled", true
	case "resources/read":
		return "resources/read", true
	case "prompts/get":
		return "prompts/get", true
	}
	return "", false
}

// validPlain reports whether s, the inside of a string without escapes,
// is printable ASCII, which decodes to itself (no control character, which
// JSON forbids raw, and no byte encoding/json might replace as invalid
// UTF-8).
func validPlain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
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
	if c := id[0]; (c == '"' && utf8.Valid(id)) || c == '-' || (c >= '0' && c <= '9') {
		return id
	}
	return nil // not an id that can be answered: JSON-RPC 2.0 §5 answers null
}
