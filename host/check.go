package host

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/toolschema"
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
	schema *toolschema.Schema
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
			t.schema, t.schemaErr = old.schema, old.schemaErr
			out[cat.Names[i]] = t
			continue
		}
		var d struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		json.Unmarshal(def, &d)
		if len(d.InputSchema) > 0 {
			t.schema, t.schemaErr = toolschema.Compile(d.InputSchema)
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
		problem = t.schema.Check(p.Arguments)
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
