package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// Error is the error member of a JSON-RPC response (JSON-RPC 2.0 §5.1).
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ErrorLine encodes an error response to id, newline-terminated. An absent
// or null id, or one that is not valid JSON, is sent as null (the answer to
// a line whose id could not be read, JSON-RPC 2.0 §5): an id is never
// echoed in a spelling JSON forbids.
func ErrorLine(id json.RawMessage, code int, msg string, data any) []byte {
	if !HasID(id) || !json.Valid(id) {
		id = json.RawMessage("null")
	}
	return line(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   Error           `json:"error"`
	}{"2.0", id, Error{code, msg, data}})
}

// ResultLine encodes a result response to id, newline-terminated.
func ResultLine(id json.RawMessage, result any) []byte {
	return line(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}

// RequestLine encodes a request (id non-nil) or a notification (id nil),
// newline-terminated; nil params are left out.
func RequestLine(id any, method string, params any) []byte {
	v := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		v["id"] = id
	}
	if params != nil {
		v["params"] = params
	}
	return line(v)
}

// line encodes v and a newline. <, > and & are written as themselves: a
// message the host writes carries text (tool names, server output) as the
// peer sent it, not rewritten to \u003c.
func line(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // callers pass only values built from marshalable types
	}
	return buf.Bytes()
}
