package toolschema

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// A plainSchema is an inputSchema of the form most tools have, checked on
// the arguments' bytes without decoding them: an object whose named
// properties each have at most one JSON type, optionally an enum of plain
// strings, a minimum and a maximum, and for an array the plain schema of
// its items; some of them required, and either further properties
// allowed or none. It only ever answers "valid" where the compiled schema
// (github.com/google/jsonschema-go) would: anything else, a value of
// another type, a string outside the enum or written with an escape, a
// number that is not a plain integer of at most 2^53 where a bound applies,
// a missing required property, an integer written with a fraction or an
// exponent, a member name with an escape or a byte beyond ASCII, sends the
// call to that validator, which also words the error. A schema with any
// other keyword has no plainSchema.
type plainSchema struct {
	props    map[string]*plainProp // property name → its schema
	required []string
	closed   bool // additionalProperties: false
}

// plainProp is the schema of one property (or of an array's items).
type plainProp struct {
	typ      string   // its JSON Schema type, "" for any
	enum     []string // the raw JSON strings allowed (quotes included); nil: any value
	min, max *float64 // minimum and maximum, inclusive (JSON Schema 2020-12 validation §6.2)
	items    *plainProp
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
	p := &plainSchema{props: map[string]*plainProp{}}
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
				prop, ok := plainProperty(sub, 0)
				if !ok || !plainName(name) {
					return nil
				}
				p.props[name] = prop
			}
		default:
			return nil
		}
	}
	return p
}

// plainProperty returns the schema of a property that has at most one
// type, annotations, an enum of plain strings, numeric bounds and items
// of that same form (nested up to depth 4).
func plainProperty(raw json.RawMessage, depth int) (*plainProp, bool) {
	if string(raw) == "true" {
		return &plainProp{}, true
	}
	var m map[string]json.RawMessage
	if depth > 4 || json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	p := &plainProp{}
	for k, v := range m {
		ok := true
		switch {
		case annotationKeys[k]:
		case k == "type":
			ok = json.Unmarshal(v, &p.typ) == nil && plainTypes[p.typ]
		case k == "enum":
			p.enum, ok = plainEnum(v)
		case k == "minimum":
			p.min, ok = plainBound(v)
		case k == "maximum":
			p.max, ok = plainBound(v)
		case k == "items":
			p.items, ok = plainProperty(v, depth+1)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	return p, true
}

// plainEnum returns the values of an enum when each is a string of
// printable ASCII without escapes: a value then equals one exactly when
// its raw bytes do.
func plainEnum(raw json.RawMessage) ([]string, bool) {
	var vals []json.RawMessage
	if json.Unmarshal(raw, &vals) != nil || len(vals) == 0 {
		return nil, false
	}
	enum := make([]string, len(vals))
	for i, v := range vals {
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || !plainName(string(v[1:len(v)-1])) {
			return nil, false
		}
		enum[i] = string(v)
	}
	return enum, true
}

// plainBound returns a minimum or maximum as the validator reads it, a
// float64.
func plainBound(raw json.RawMessage) (*float64, bool) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	return &f, true
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
		prop, known := p.props[string(name)]
		if !known && p.closed || known && !prop.valid(value) {
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

// valid reports whether the JSON value v surely validates against p.
func (p *plainProp) valid(v []byte) bool {
	if !plainValue(p.typ, v) {
		return false
	}
	if p.enum != nil && !slices.Contains(p.enum, string(v)) {
		return false
	}
	if (p.min != nil || p.max != nil) && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		n, ok := plainInt(v)
		if !ok || p.min != nil && n < *p.min || p.max != nil && n > *p.max {
			return false
		}
	}
	if p.items != nil && v[0] == '[' {
		ok := true
		err := jsonrpc.Elements(v, func(e []byte) { ok = ok && p.items.valid(e) })
		return err == nil && ok
	}
	return true
}

// plainInt returns the JSON number v as a float64 when it is an integer
// without fraction or exponent of magnitude at most 2^53, which float64
// holds exactly: compared with a float64 bound it then orders as the
// validator's exact comparison does.
func plainInt(v []byte) (float64, bool) {
	if bytes.ContainsAny(v, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return 0, false
	}
	return float64(n), true
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
