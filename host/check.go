package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Error codes of the host's catalog checks (see protocol.go for the others).
// An unknown tool gets the code servers give it (MCP server/tools "Error
// Handling": -32602, as go-sdk answers); a changed definition is what only
// the host knows, so it has a code of its own, outside JSON-RPC's reserved
// range. Arguments that fail the inputSchema are no JSON-RPC error at all:
// the 2025-11-25 revision sends input validation errors back to the model
// as a tool result with isError true, so that it can correct the call; the
// host's reason and details ride in its _meta under [MetaRefusal].
const (
	CodeUnknownTool = jsonrpc.CodeInvalidParams // -32602: tools/call names a tool the current catalog lacks
	CodeToolChanged = -31006                    // the tool's definition changed since the client was given it
)

// MetaRefusal is the _meta key of a tools/call result the host answered
// itself (isError true: arguments that fail the inputSchema): an object
// with reason "invalid_arguments", detail, tool (the current definition),
// defaults, currentEpoch, catalogRevision and retry.
const MetaRefusal = "io.github.mcpepoch/refusal"

// tool is one entry of a Catalog, ready for checks.
type tool struct {
	def    json.RawMessage // as the server sent it
	digest build.Digest    // of its RFC 8785 canonical form
	schema *jsonschema.Resolved
	// plain is schema's fast check, when it has that form (schemafast.go).
	plain *plainSchema
	// maxDepth bounds the nesting of arguments checked against a
	// recursive schema (schemabound.go); 0 for none.
	maxDepth int
	// schemaErr is why inputSchema could not be compiled; calls are then
	// forwarded unchecked, and the reason is logged once.
	schemaErr error
}

// compileTools prepares cat's tools for checks: the digest of each
// definition (from cat) and its compiled inputSchema (JSON Schema 2020-12
// unless the schema says otherwise, MCP tools spec). A definition with the
// same digest in prev (the catalog it replaces: a restart, a re-list) keeps
// its compiled schema, so an unchanged catalog costs no compilation.
func compileTools(cat *Catalog, prev map[string]*tool) map[string]*tool {
	out := make(map[string]*tool, len(cat.Tools))
	for i, def := range cat.Tools {
		t := &tool{def: def, digest: cat.digests[i]}
		if old := prev[cat.Names[i]]; old != nil && old.digest == t.digest {
			t.schema, t.plain, t.maxDepth, t.schemaErr = old.schema, old.plain, old.maxDepth, old.schemaErr
			out[cat.Names[i]] = t
			continue
		}
		var d struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		json.Unmarshal(def, &d)
		if len(d.InputSchema) > 0 {
			t.schema, t.schemaErr = compileSchema(d.InputSchema)
			if t.schema != nil {
				t.plain = compilePlain(d.InputSchema)
				t.maxDepth = recursionDepth(d.InputSchema)
			}
		}
		out[cat.Names[i]] = t
	}
	return out
}

// toolDigest returns the digest of a tool definition's RFC 8785 canonical
// form and that form, or, when it has none (a number beyond float64), the
// digest of its bytes as sent and nil.
func toolDigest(def json.RawMessage) (build.Digest, []byte) {
	canon, err := jcs.Transform(def)
	if err != nil {
		return build.DigestBytes(def), nil
	}
	return build.DigestBytes(canon), canon
}

// toolName is the name member of a tool definition, "" when it has none.
func toolName(def json.RawMessage) string {
	var n struct {
		Name string `json:"name"`
	}
	json.Unmarshal(def, &n)
	return n.Name
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

// callParams is what the checks read of tools/call params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// checkCallLocked decides whether a tools/call may reach the current child.
// It returns nil to forward, or the error response to send instead. Rules
// (seed: "reject a call prepared against an old schema"):
//   - a tool the current catalog lacks is refused (CodeUnknownTool, the
//     spec's -32602);
//   - a call to a tool whose definition changed since this client was last
//     given it is refused (CodeToolChanged), with the current definition in
//     data, even if it validates: a changed default changes what a valid
//     call means;
//   - arguments that do not validate against the current inputSchema are
//     answered with a tool result, isError true, whose text says why and
//     whose _meta[MetaRefusal] holds the current definition;
//
// Once the current definition has reached the client, by its tools/list or
// inside such an error, the client is informed for that tool and its next
// valid call is forwarded. Annotations play no part. h.mu is held.
func (h *Host) checkCallLocked(m *jsonrpc.Message, p *callParams) []byte {
	if h.tools == nil {
		return nil // catalog unknown: the server has not been listed yet
	}
	ep := h.child.epoch
	t, ok := h.tools[p.Name]
	if !ok {
		return jsonrpc.ErrorLine(m.ID, CodeUnknownTool,
			fmt.Sprintf("unknown_tool: %q is not in the current tool catalog (execution epoch %s); refresh tools/list", p.Name, ep),
			map[string]any{"reason": "unknown_tool", "tool": p.Name, "currentEpoch": ep,
				"catalogRevision": h.catalog.Revision, "tools": h.catalog.Names})
	}
	known, listed := h.informed[p.Name]
	var problem string
	if t.schema != nil {
		args := p.Arguments
		if len(args) == 0 || bytes.Equal(args, []byte("null")) {
			args = json.RawMessage("{}")
		}
		if t.maxDepth > 0 {
			if d := jsonrpc.NestingDepth(args); d > t.maxDepth {
				problem = fmt.Sprintf("arguments nested %d levels deep; against this recursive inputSchema the host checks at most %d levels, so that one check cannot stall it", d, t.maxDepth)
			}
		}
		if problem == "" && (t.plain == nil || !t.plain.valid(args)) {
			inst, err := schemaInstance(args)
			if err == nil {
				err = t.schema.Validate(inst)
			}
			if err != nil {
				problem = "arguments do not match the current inputSchema: " + validationText(err)
			}
		}
	}
	changed, reason := false, "invalid_arguments"
	if listed && known != t.digest {
		changed, reason = true, "tool_changed"
		if problem == "" {
			problem = "the tool's definition changed since this client last listed it"
		} else {
			problem = "the tool's definition changed since this client last listed it, and the " + problem
		}
	}
	if problem == "" {
		return nil
	}
	h.informed[p.Name] = t.digest
	data := map[string]any{"reason": reason, "detail": problem, "tool": t.def,
		"defaults": schemaDefaults(t.def), "currentEpoch": ep, "catalogRevision": h.catalog.Revision,
		"retry": "read the current definition, correct the arguments, and call again"}
	if changed {
		return jsonrpc.ErrorLine(m.ID, CodeToolChanged,
			fmt.Sprintf("%s: %s (%s, execution epoch %s); the current definition is in error.data.tool; the call was not forwarded: call again with arguments for that definition", reason, problem, p.Name, ep), data)
	}
	text := fmt.Sprintf("%s: %s (%s, execution epoch %s); the call was not forwarded: correct the arguments and call again. The tool's current definition: %s", reason, problem, p.Name, ep, t.def)
	return jsonrpc.ResultLine(m.ID, map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": true,
		"_meta":   map[string]any{MetaRefusal: data}})
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

// schemaDefaults returns the default of each top-level property of a tool's
// inputSchema, so that a changed default (the seed's publish_preview
// target: preview → production) is visible in the error itself.
func schemaDefaults(def json.RawMessage) map[string]json.RawMessage {
	var d struct {
		InputSchema struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	json.Unmarshal(def, &d)
	out := map[string]json.RawMessage{}
	for name, p := range d.InputSchema.Properties {
		if len(p.Default) > 0 {
			out[name] = p.Default
		}
	}
	return out
}

// noteListedLocked records that a tools/list result of child c reached the
// client: the client is now informed of those definitions. A definition
// the host's catalog lacks or holds otherwise (a tool the server added at
// runtime, without or before its own list_changed) makes the host re-list
// the server, so that the catalog learns what the client was shown. h.mu
// is held.
func (h *Host) noteListedLocked(c *child, result json.RawMessage) {
	memo := &h.listed
	if memo.result == nil || !bytes.Equal(memo.result, result) {
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(result, &res) != nil {
			return
		}
		memo.names, memo.digests = memo.names[:0], memo.digests[:0]
		for i, def := range res.Tools {
			name, d := h.listedDigestLocked(i, def)
			memo.names, memo.digests = append(memo.names, name), append(memo.digests, d)
		}
		memo.result = append(memo.result[:0], result...)
	}
	stale := false
	for i, name := range memo.names {
		d := memo.digests[i]
		h.informed[name] = d
		if t := h.tools[name]; h.tools != nil && (t == nil || t.digest != d) {
			stale = true
		}
	}
	if stale && c == h.child && h.state == StateReady && !h.refresh.running {
		h.requestRefreshLocked(c, nil)
	}
}

// listedMemo is the last tools/list result a client was given and the
// name and digest of each tool in it (both follow from the result's bytes
// alone): a client that lists an unchanged catalog again costs one
// comparison of those bytes.
type listedMemo struct {
	result  []byte
	names   []string
	digests []build.Digest
}

// listedDigestLocked returns the name and digest of def, the i-th tool of
// a tools/list result the client is given. A definition the current
// catalog holds byte for byte (at i, as servers list in a stable order, or
// under its name) has the catalog's digest; only another one is
// canonicalised. h.mu is held.
func (h *Host) listedDigestLocked(i int, def json.RawMessage) (string, build.Digest) {
	if cat := h.catalog; cat != nil && i < len(cat.Tools) && bytes.Equal(cat.Tools[i], def) {
		return cat.Names[i], cat.digests[i]
	}
	name := toolName(def)
	if t := h.tools[name]; t != nil && bytes.Equal(t.def, def) {
		return name, t.digest
	}
	d, _ := toolDigest(def)
	return name, d
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// validationText is a schema validation error on one line, in JSON's
// words: the validator prints a JSON null as Go's "<invalid reflect.Value>".
func validationText(err error) string {
	return strings.ReplaceAll(oneLine(err.Error()), "<invalid reflect.Value>", "null")
}
