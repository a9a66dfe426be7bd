// Package toolschema checks a tools/call's arguments against the tool's
// inputSchema (MCP server/tools: JSON Schema 2020-12 unless the schema
// names another draft): with github.com/google/jsonschema-go, after a
// fast check on the arguments' bytes for schemas of a plain form
// (fast.go, held to the validator by FuzzPlainSchemaAgrees), and with a
// bound on the nesting of arguments checked against a recursive schema
// (bound.go), so that no call can stall the check.
package toolschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Schema is a compiled inputSchema. It is safe for concurrent use.
type Schema struct {
	resolved *jsonschema.Resolved
	// plain is the fast check, when the schema has that form (fast.go).
	plain *plainSchema
	// maxDepth bounds the nesting of arguments checked against a
	// recursive schema (bound.go); 0 for none.
	maxDepth int
}

// Compile compiles an inputSchema. Remote references are not loaded: a
// server's schema must not make the host fetch anything. The error says
// why the schema cannot be used; the caller then forwards calls
// unchecked.
func Compile(raw json.RawMessage) (*Schema, error) {
	r, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	return &Schema{resolved: r, plain: compilePlain(raw), maxDepth: recursionDepth(raw)}, nil
}

// Check returns why args (a tools/call's arguments; empty or null is
// {}) do not match the schema, on one line in JSON's words, or "" when
// they do.
func (s *Schema) Check(args json.RawMessage) string {
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	if s.maxDepth > 0 {
		if d := jsonrpc.NestingDepth(args); d > s.maxDepth {
			return fmt.Sprintf("arguments nested %d levels deep; against this recursive inputSchema the host checks at most %d levels, so that one check cannot stall it", d, s.maxDepth)
		}
	}
	if s.plain != nil && s.plain.valid(args) {
		return ""
	}
	inst, err := schemaInstance(args)
	if err == nil {
		err = s.resolved.Validate(inst)
	}
	if err != nil {
		return "arguments do not match the current inputSchema: " + validationText(err)
	}
	return ""
}

// compileSchema resolves an inputSchema with github.com/google/jsonschema-go
// (draft 2020-12, MCP's default, and draft-07). Remote references are not
// loaded: a server's schema must not make the host fetch anything.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// schemaInstance decodes tools/call arguments for inputSchema validation.
// Numbers are read as json.Number, never through float64 first, so that a
// valid JSON number float64 cannot hold (1e400, 1e-400, 2^64 and beyond;
// RFC 8259 §6 sets no range) is not refused by the decoder, and each is
// handed to the validator as the Go value nearest it (numberValue). The
// line forwarded is the client's, byte for byte: nothing decoded here is
// written anywhere.
func schemaInstance(args json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return exactNumbers(v), nil
}

// exactNumbers replaces every json.Number in v (from schemaInstance) by
// numberValue's value, in place.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	case json.Number:
		return numberValue(string(x))
	}
	return v
}

// numberValue is the value a JSON number is validated as: an integer
// literal within int64 or uint64 as that integer, exactly (a bound such as
// maximum 2^53 then refuses 2^53+1, which float64 would round onto the
// bound); any other number as the nearest float64, the precision in which
// github.com/google/jsonschema-go holds the schema's own bounds. Beyond
// float64's range a number is validated as the largest float64 of its
// sign, and a non-zero number below its smallest as the smallest, so that
// it keeps its side of every bound but one equal to that very float64.
func numberValue(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // s is a valid JSON number: only ErrRange
	switch {
	case math.IsInf(f, 0):
		return math.Copysign(math.MaxFloat64, f)
	case f == 0 && strings.ContainsAny(mantissa(s), "123456789"):
		return math.Copysign(math.SmallestNonzeroFloat64, sign(s))
	}
	return f
}

// mantissa is a JSON number without its exponent.
func mantissa(s string) string {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return s[:i]
	}
	return s
}

func sign(s string) float64 {
	if strings.HasPrefix(s, "-") {
		return -1
	}
	return 1
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// validationText is a schema validation error on one line, in JSON's
// words: the validator prints a JSON null as Go's "<invalid reflect.Value>".
func validationText(err error) string {
	return strings.ReplaceAll(oneLine(err.Error()), "<invalid reflect.Value>", "null")
}
