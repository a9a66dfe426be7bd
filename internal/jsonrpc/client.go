package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// clientMembers are the envelope members read from a client message;
// tools/call's params members follow.
var (
	clientMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	callMembers   = []string{"name", "arguments", "_meta"}
)

// ProtocolError is a client message that is refused: one a reader might
// read differently from the server (a member named twice, or in another
// case, as Go's encoding/json would match it but servers do not), or an id
// of a type JSON-RPC does not allow.
type ProtocolError struct {
	Code int // CodeInvalidRequest or CodeInvalidParams
	Msg  string
}

func (e *ProtocolError) Error() string { return e.Msg }

// ParseClient reads a client message strictly (JSON-RPC 2.0 §4, §5): member
// names match exactly, as the servers match them, and a member that is
// read must appear once and in no other case; the id must be a string, an
// integer between -2^53 and 2^53, or null; for a tools/call request, params
// must be an object whose name is a non-empty string. It returns a plain
// error for a line that is not one valid JSON object, and a
// *ProtocolError for one that is refused (with the message too when only
// tools/call params are at fault).
//
// A line nested deeper than MaxDepth is refused with CodeInvalidRequest
// and the message, when its envelope can still be read (the scanner steps
// over values, however deep): the answer then goes to the request's own
// id. JSON-RPC 2.0 §5.1 keeps -32700 for JSON that is not valid, which
// such a line is not (RFC 8259 §9 makes depth a parser's limit), and §5
// answers id null only when the id cannot be read. Whether the values
// below the limit are valid is not checked: the line is refused either
// way.
func ParseClient(line []byte) (*Message, error) {
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	valid := json.Valid(line)
	tooDeep := !valid && nestingDepth(line) > MaxDepth
	if !valid && !tooDeep {
		return nil, fmt.Errorf("not valid JSON")
	}
	members, err := strictObject(line, clientMembers)
	if err != nil {
		return nil, &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: " + err.Error()}
	}
	m := &Message{ID: members["id"], Params: members["params"]}
	_, m.HasResult = members["result"]
	_, m.HasError = members["error"]
	if raw, ok := members["method"]; ok {
		if m.Method, err = stringValue(raw); err != nil {
			return nil, &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: method is not a string"}
		}
	}
	if err := checkID(m.ID); err != nil {
		return nil, err
	}
	if tooDeep && len(m.ID) > 0 && !json.Valid(m.ID) {
		return nil, fmt.Errorf("not valid JSON") // no id to answer under
	}
	if tooDeep {
		return m, &ProtocolError{Code: CodeInvalidRequest, Msg: fmt.Sprintf(
			"invalid request: nested deeper than %d levels, the limit of the host's JSON reader; not forwarded", MaxDepth)}
	}
	if m.Method == "tools/call" && m.IsRequest() {
		params, err := strictObject(m.Params, callMembers)
		if err != nil {
			return m, &ProtocolError{Code: CodeInvalidParams, Msg: "invalid params: tools/call params: " + err.Error()}
		}
		name, err := stringValue(params["name"])
		if err != nil || name == "" {
			return m, &ProtocolError{Code: CodeInvalidParams, Msg: "invalid params: tools/call params.name must be a non-empty string"}
		}
		m.Tool, m.Arguments = name, params["arguments"]
	}
	return m, nil
}

// MaxDepth is the deepest nesting of arrays and objects a client message
// may have: encoding/json's own limit, which the host's checks (and many
// servers' readers) share. RFC 8259 §9 lets a parser set one.
const MaxDepth = 10000

// NestingDepth returns the deepest nesting of arrays and objects in b,
// counted outside strings, whether or not b is valid JSON: 1 for {} or [].
func NestingDepth(b []byte) int { return nestingDepth(b) }

// nestingDepth returns the deepest nesting of arrays and objects in b,
// counted outside strings, whether or not b is valid JSON.
func nestingDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			e := scanString(b, i)
			if e < 0 {
				return deepest
			}
			i = e - 1
		case '{', '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// checkID refuses an id that is not a string, an exact integer of at most
// 2^53 or null.
func checkID(id json.RawMessage) error {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"' && !utf8.Valid(id):
		return &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: id is not valid UTF-8"}
	case c == '"', bytes.Equal(id, []byte("null")):
	case c == '-', c >= '0' && c <= '9':
		// JSON-RPC 2.0 §4: numbers SHOULD NOT have fractional parts.
		// Servers re-encode ids they cannot hold exactly (0.5, 1e400,
		// 2^64), and an answer under another id never reaches the
		// client: refuse what is not an integer of at most 2^53.
		if plainInt(id) {
			break // at most 15 digits: within 2^53
		}
		r, ok := numberRat(id)
		if !ok || !r.IsInt() || r.Num().CmpAbs(maxExactID) > 0 {
			return &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: a numeric id must be an integer between -2^53 and 2^53"}
		}
	default:
		return &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: id must be a string, a number or null"}
	}
	return nil
}

// strictObject returns the members of the JSON object b by exact name.
// It fails when b is not one object, or when a member named in watch
// appears twice or under a name differing from it only in case. Values
// are stepped over, not decoded (scan.go); ParseClient has checked that
// the whole line is valid JSON.
func strictObject(b []byte, watch []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, 8)
	var bad error
	err := wholeObject(b, func(raw, v []byte) {
		if bad != nil {
			return
		}
		key := keyName(raw)
		for _, w := range watch {
			if key != w && strings.EqualFold(key, w) {
				bad = fmt.Errorf("member %q: only %q is read, a name differing in case is refused", key, w)
				return
			}
		}
		if _, dup := out[key]; dup && slices.Contains(watch, key) {
			bad = fmt.Errorf("member %q appears twice", key)
			return
		}
		out[key] = v
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}
