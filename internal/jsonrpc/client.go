package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// clientMembers are the envelope members read from a client message;
// tools/call's params members follow. The constants index them in
// strictMembers.
var (
	clientMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	callMembers   = []string{"name", "arguments", "_meta"}
)

const (
	memberID, memberMethod, memberParams, memberResult, memberError = 1, 2, 3, 4, 5
	memberName, memberArguments                                     = 0, 1
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
// must be an object whose name is a non-empty string, and no object in its
// arguments, at any depth, may name a member twice. It returns a plain
// error for a line that is not one valid JSON object, and a
// *ProtocolError for one that is refused (with the message too when only
// tools/call params are at fault). Space, tab, CR and LF may surround
// the object, as RFC 8259 §2 allows around any JSON text.
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
	if i := skipSpace(line, 0); i == len(line) || line[i] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	// One pass validates the line and reads its envelope; only a line
	// it refuses is read again, to tell one nested too deep from one that
	// is not JSON.
	var members strictMembers
	var bad error
	note := func(raw, v []byte) { members.note(raw, v, clientMembers, &bad) }
	tooDeep := false
	if !validObject(line, note) {
		if tooDeep = nestingDepth(line) > MaxDepth; !tooDeep {
			return nil, fmt.Errorf("not valid JSON")
		}
		members, bad = strictMembers{}, nil
		if err := wholeObject(line, note); err != nil {
			bad = err
		}
	}
	if bad != nil {
		return nil, &ProtocolError{Code: CodeInvalidRequest, Msg: "invalid request: " + bad.Error()}
	}
	m := &Message{ID: members.val[memberID], Params: members.val[memberParams]}
	m.HasResult, m.HasError = members.found[memberResult], members.found[memberError]
	if members.found[memberMethod] {
		var err error
		if m.Method, err = stringValue(members.val[memberMethod]); err != nil {
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
		var params strictMembers
		if err := strictObject(m.Params, callMembers, &params); err != nil {
			return m, &ProtocolError{Code: CodeInvalidParams, Msg: "invalid params: tools/call params: " + err.Error()}
		}
		name, err := stringValue(params.val[memberName])
		if err != nil || name == "" {
			return m, &ProtocolError{Code: CodeInvalidParams, Msg: "invalid params: tools/call params.name must be a non-empty string"}
		}
		m.Tool, m.Arguments = name, params.val[memberArguments]
		// The host checks arguments as encoding/json reads them (the last
		// of a name); a server that keeps the first would run another value.
		if dup, ok := duplicateMember(m.Arguments); ok {
			return m, &ProtocolError{Code: CodeInvalidParams, Msg: fmt.Sprintf(
				"invalid params: tools/call arguments: member %q appears twice in one object; not forwarded", dup)}
		}
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
			e := jsonstr.End(b, i)
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

// strictMembers holds the values of the watched members of an object,
// at the index of their name in the watch list; found says which appear.
type strictMembers struct {
	val   [6]json.RawMessage
	found [6]bool
}

// strictObject reads the members of the JSON object b named in watch (at
// most six) into out, by exact name. It refuses a member whose name
// differs from a watched one only in case (encoding/json would read it
// as that one) and a watched member that appears twice. Other members are
// stepped over unread, and their names are not kept.
func strictObject(b []byte, watch []string, out *strictMembers) error {
	var bad error
	if err := wholeObject(b, func(raw, v []byte) { out.note(raw, v, watch, &bad) }); err != nil {
		return err
	}
	return bad
}

// note is strictObject's reading of one member (raw key, value): kept
// when watched, *bad set when refused; after a refusal it does nothing.
func (out *strictMembers) note(raw, v []byte, watch []string, bad *error) {
	if *bad != nil {
		return
	}
	var key string
	if bytes.IndexByte(raw, '\\') < 0 {
		key = unsafeString(raw[1 : len(raw)-1]) // compared, never kept
	} else {
		key = keyName(raw)
	}
	for i, w := range watch {
		switch {
		case key == w:
			if out.found[i] {
				*bad = fmt.Errorf("member %q appears twice", w)
				return
			}
			out.val[i], out.found[i] = v, true
		case strings.EqualFold(key, w):
			*bad = fmt.Errorf("member %q: only %q is read, a name differing in case is refused", key, w)
			return
		}
	}
}

// unsafeString returns b as a string without copying; it must not outlive
// b, nor b change while it is used.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
