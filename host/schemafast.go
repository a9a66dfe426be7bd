package host

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// A plainSchema is an inputSchema of the form most tools have, checked on
// the arguments' bytes without decoding them: an object whose named
// properties each have one JSON type (or none), some of them required,
// and either further properties allowed or none. It only ever answers
// "valid" where the compiled schema (github.com/google/jsonschema-go) would:
// anything else, a value of another type, a missing required property,
// an integer written with a fraction or an exponent, a member name with an
// escape or a byte beyond ASCII, sends the call to that validator, which
// also words the error. A schema with any other keyword has no plainSchema.
type plainSchema struct {
	props    map[string]string // property name → its JSON Schema type, "" for any
	required []string
	closed   bool // additionalProperties: false
}

// annotation keywords (JSON Schema 2020-12 §9, and the draft-07 ones)
// that never change whether an instance is valid.
var annotationKeys = map[string]bool{"title": true, "description": true, "default": true,
	"examples": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// plainTypes are the type values a plainSchema's property may have.
var plainTypes = map[string]bool{"string": true, "boolean": true, "number": true, "integer": true,
	"object": true, "array": true, "null": true}

// compilePlain returns the plainSchema of an inputSchema, or nil when it is
// not of that form.
func compilePlain(raw json.RawMessage) *plainSchema {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	p := &plainSchema{props: map[string]string{}}
	for k, v := range top {
		switch {
		case annotationKeys[k]:
		case k == "$schema":
			var s string
			if json.Unmarshal(v, &s) != nil || (s != "https://json-schema.org/draft/2020-12/schema" && s != "http://json-schema.org/draft-07/schema#") {
				return nil
			}
		case k == "type":
			if string(v) != `"object"` {
				return nil
			}
		case k == "additionalProperties":
			switch string(v) {
			case "false":
				p.closed = true
			case "true":
			default:
				return nil
			}
		case k == "required":
			if json.Unmarshal(v, &p.required) != nil || len(p.required) > 63 {
				return nil
			}
		case k == "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, sub := range props {
				typ, ok := plainProperty(sub)
				if !ok || !plainName(name) {
					return nil
				}
				p.props[name] = typ
			}
		default:
			return nil
		}
	}
	return p
}

// plainProperty returns the type of a property's schema that has at most
// one type and annotations.
func plainProperty(raw json.RawMessage) (string, bool) {
	if string(raw) == "true" {
		return "", true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", false
	}
	typ := ""
	for k, v := range m {
		switch {
		case annotationKeys[k]:
		case k == "type":
			if json.Unmarshal(v, &typ) != nil || !plainTypes[typ] {
				return "", false
			}
		default:
			return "", false
		}
	}
	return typ, true
}

// plainName reports whether a property name is printable ASCII without a
// quote or backslash, so that the raw key of a member matches it byte for
// byte exactly when the decoded key would.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// valid reports whether args (valid JSON, as the client line is) surely
// validate; false means "ask the validator", not "invalid".
func (p *plainSchema) valid(args []byte) bool {
	args = bytes.TrimLeft(args, " \t\r\n")
	if len(args) == 0 || args[0] != '{' {
		return false
	}
	ok := true
	var found uint64 // bit i: required[i] is present
	err := jsonrpc.Members(args, func(key, value []byte) {
		name := key[1 : len(key)-1]
		if !ok || !plainName(string(name)) {
			ok = false
			return
		}
		typ, known := p.props[string(name)]
		if !known && p.closed || known && !plainValue(typ, value) {
			ok = false
			return
		}
		for i, r := range p.required {
			if r == string(name) {
				found |= 1 << i
			}
		}
	})
	return err == nil && ok && found == 1<<len(p.required)-1
}

// plainValue reports whether the JSON value v surely has type typ.
func plainValue(typ string, v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch typ {
	case "":
		return true
	case "string":
		return v[0] == '"'
	case "object":
		return v[0] == '{'
	case "array":
		return v[0] == '['
	case "boolean":
		return string(v) == "true" || string(v) == "false"
	case "null":
		return string(v) == "null"
	case "number":
		return v[0] == '-' || v[0] >= '0' && v[0] <= '9'
	case "integer":
		if bytes.ContainsAny(v, ".eE") {
			return false
		}
		_, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil
	}
	return false
}
