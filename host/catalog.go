package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/localapi"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/internal/toolschema"
)

// Revision is a catalog revision (localapi.Revision).
type Revision = localapi.Revision

// Catalog is the tools/list of one epoch.
type Catalog struct {
	Revision Revision
	Tools    []json.RawMessage // each tool as the server sent it
	Names    []string
	// digests[i] is Tools[i]'s digest (toolDigest), canon[i] its RFC 8785
	// form, nil when it has none.
	digests []build.Digest
	canon   [][]byte
}

// maxPages bounds tools/list paging against a server whose cursors never
// repeat and never end.
const maxPages = 1000

// fetchCatalog pages through tools/list on child c (MCP tools/list,
// cursor/nextCursor) with private ids.
func (h *Host) fetchCatalog(ctx context.Context, c *child) (*Catalog, error) {
	tools, err := h.fetchPages(ctx, c, "tools/list", "tools")
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	prev := h.catalog
	h.mu.Unlock()
	return newCatalogAfter(prev, tools)
}

// fetchPages pages through method (tools/list, prompts/list,
// resources/list) on child c and returns the items under key.
//
// A cursor is opaque (MCP "Pagination"), so a listing ends where the
// server stops giving one, and also where it gives one it gave before
// (its own or an earlier page's: asking again would list the same pages
// for ever) or after maxPages pages. Such a cut keeps what was listed: a
// direct client that stops paging there sees the same tools. The cut is
// told once per child and method, on stderr and in the audit log
// (child_output_dropped); a call to a tool the catalog lacks does not
// re-list such a child (recheckUnknown).
func (h *Host) fetchPages(ctx context.Context, c *child, method, key string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	var cursor string
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			h.listCut(c, method, fmt.Sprintf("more than %d pages", maxPages))
			break
		}
		var params json.RawMessage
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		raw, err := h.privateCall(ctx, c, method, params)
		if err != nil {
			return nil, err
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("%s result: %v", method, err)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(res[key], &got); err != nil && res[key] != nil {
			return nil, fmt.Errorf("%s result: %s: %v", method, key, err)
		}
		items = append(items, got...)
		seen[cursor] = true
		cursor = ""
		json.Unmarshal(res["nextCursor"], &cursor)
		if cursor == "" {
			break
		}
		if seen[cursor] {
			h.listCut(c, method, fmt.Sprintf("page %d gave a nextCursor the listing had already followed", page+1))
			break
		}
	}
	return items, nil
}

// listCut tells, once per child and method, that child c's method listing
// was cut short, and why.
func (h *Host) listCut(c *child, method, why string) {
	h.mu.Lock()
	told := c.listCut[method]
	if c.listCut == nil {
		c.listCut = map[string]bool{}
	}
	c.listCut[method] = true
	h.mu.Unlock()
	if told {
		return
	}
	h.logf("epoch %s: %s: %s; the listing stops there and keeps what the server listed", c.epoch, method, why)
	h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{
		audit.FieldMethod: method, "reason": method + " cut short: " + why})
}

// newCatalogAfter makes the catalog of tools, as listed after prev (the
// catalog it replaces, nil for none). A definition prev holds byte for
// byte takes its name, digest and canonical form from prev, so that a
// re-list of an unchanged catalog (a restart, a list_changed that changed
// nothing) canonicalises nothing. The revision is the digest of the RFC
// 8785 form of the tools array, "[" and the tools' canonical forms joined
// by "," and "]"; when a tool has no canonical form (a number beyond
// float64) it is the digest of the array as sent, compacted, which still
// changes whenever the tools do: a server's odd number must not stop its
// catalog from being published.
func newCatalogAfter(prev *Catalog, tools []json.RawMessage) (*Catalog, error) {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	n := len(tools)
	cat := &Catalog{Tools: tools, Names: make([]string, n), digests: make([]build.Digest, n), canon: make([][]byte, n)}
	if n == 0 {
		cat.Names = nil
	}
	var index map[string]int // prev's definitions, built at the first miss
	whole, size := true, 2
	for i, def := range tools {
		j := -1
		switch {
		case prev == nil:
		case i < len(prev.Tools) && bytes.Equal(prev.Tools[i], def):
			j = i
		default:
			if index == nil {
				index = make(map[string]int, len(prev.Tools))
				for k, d := range prev.Tools {
					index[string(d)] = k
				}
			}
			if k, ok := index[string(def)]; ok {
				j = k
			}
		}
		if j >= 0 {
			cat.Names[i], cat.digests[i], cat.canon[i] = prev.Names[j], prev.digests[j], prev.canon[j]
		} else {
			cat.Names[i] = toolName(def)
			cat.digests[i], cat.canon[i] = toolDigest(def)
		}
		whole = whole && cat.canon[i] != nil
		size += len(cat.canon[i]) + 1
	}
	if !whole {
		arr, err := json.Marshal(tools)
		if err != nil {
			return nil, err
		}
		cat.Revision = Revision(build.DigestBytes(arr))
		return cat, nil
	}
	arr := make([]byte, 0, size)
	arr = append(arr, '[')
	for i, c := range cat.canon {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, c...)
	}
	cat.Revision = Revision(build.DigestBytes(append(arr, ']')))
	return cat, nil
}

// setCatalogLocked makes cat the catalog of child c.
func (h *Host) setCatalogLocked(c *child, cat *Catalog) {
	h.catalog = cat
	h.tools = compileTools(cat, h.tools)
	for name, t := range h.tools {
		if t.schemaErr != nil {
			h.logf("epoch %s: tool %s: inputSchema not checked: %v", c.epoch, name, t.schemaErr)
		}
	}
	tools := "tools"
	if len(cat.Names) == 1 {
		tools = "tool"
	}
	h.infof("epoch %s: catalog %s: %d %s %v", c.epoch, build.Digest(cat.Revision).Short(), len(cat.Names), tools, cat.Names)
	h.audit.event(audit.TypeCatalogPublished, c.epoch, h.run, map[string]any{"catalog_revision": string(cat.Revision), "tools": cat.Names})
	h.prepareRenewalLocked(c)
}

// fetchFirstCatalogLocked fetches the session's first catalog in the
// background once the client has initialized (or discovered), when the
// server declared tools, and the digests of its prompts and resources.
// h.mu is held.
func (h *Host) fetchFirstCatalogLocked() {
	if h.fetching || h.catalog != nil || h.child == nil {
		return
	}
	h.fetching = true
	c := h.child
	go func() {
		h.restartMu.Lock()
		unlocked := false
		defer func() {
			if !unlocked {
				h.restartMu.Unlock()
			}
		}()
		var cat *Catalog
		var err error
		h.mu.Lock()
		current := h.child == c && h.catalog == nil
		tools := c.caps.tools
		h.mu.Unlock()
		if current && c.first && !c.launchChecked {
			// What runs must be what was hashed (identity.go): when
			// not, a new epoch replaces c, and the calls held for this
			// catalog go to it.
			c.launchChecked = true
			h.startFirstCheck(c)
			if why := <-c.firstDone; why != "" {
				h.mu.Lock()
				h.fetching = false
				h.mu.Unlock()
				h.restartMu.Unlock()
				unlocked = true
				if _, err := h.restart(h.ctx, why, restartRaced); err != nil {
					h.logf("restart after the first launch check: %v", err)
				}
				h.mu.Lock()
				h.releaseEarlyLocked(c, err)
				h.mu.Unlock()
				return
			}
		}
		if current && tools {
			cat, err = h.fetchCatalog(h.ctx, c)
		}
		var lists map[string]build.Digest
		if current {
			lists = h.listDigests(h.ctx, c)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.fetching = false
		if lists != nil && h.child == c {
			h.setListsLocked(lists)
		}
		switch {
		case err != nil && h.ctx.Err() == nil:
			h.logf("epoch %s: catalog not known: %v; tools/call is refused until a listing succeeds", c.epoch, err)
		case cat != nil && h.child == c && h.catalog == nil:
			h.setCatalogLocked(c, cat)
		case current && !tools && c.caps.tools && h.child == c:
			// The server's answer declaring tools came while this
			// listing looked: list again, the early calls still held.
			h.fetchFirstCatalogLocked()
			return
		}
		h.releaseEarlyLocked(c, err)
	}()
}

// A tools/call that arrives before the session's first catalog is known
// (a client that calls at once after initialize, without listing tools)
// is held until the host's own tools/list is answered, then decided as
// any call: its grant, the approval asked through the client, its
// arguments against the inputSchema. It is never forwarded unchecked for
// lack of a catalog: when the listing fails, the held calls are answered
// server_unavailable and the next call lists again. The wait is bounded
// by the listing's own bound (Options.InitTimeout per page); the client's
// notifications/cancelled ends it, and the call is never forwarded.

// earlyCall is a tools/call held for the first catalog.
type earlyCall struct {
	m    *jsonrpc.Message
	line []byte
}

// awaitCatalogLocked holds the tools/call line while the catalog of a
// server that declared tools is not known, starting its listing if none
// runs, and reports whether it did. h.mu is held and the state is ready.
func (h *Host) awaitCatalogLocked(m *jsonrpc.Message, line []byte) bool {
	if h.catalog != nil || !h.child.caps.tools {
		return false
	}
	h.early = append(h.early, earlyCall{m, line})
	h.fetchFirstCatalogLocked()
	return true
}

// cancelEarlyLocked ends the hold of a call waiting for the first catalog
// that the client cancelled (notifications/cancelled): it is never
// forwarded and no answer is sent (MCP cancellation), as for a call held
// for an approval (cancelHeldLocked). It reports whether key named one.
func (h *Host) cancelEarlyLocked(key string) bool {
	for i, e := range h.early {
		if jsonrpc.IDKey(e.m.ID) != key {
			continue
		}
		h.early = slices.Delete(h.early, i, i+1)
		var ep epoch.Epoch
		if h.child != nil {
			ep = h.child.epoch
		}
		h.audit.event(audit.TypeCallAborted, ep, h.run, map[string]any{audit.FieldTool: e.m.Tool,
			"reason": "cancelled by the client while waiting for the catalog"})
		return true
	}
	return false
}

// releaseEarlyLocked decides the calls held for child c's first catalog
// once its listing ended with err. h.mu is held.
func (h *Host) releaseEarlyLocked(c *child, err error) {
	calls := h.early
	h.early = nil
	for _, e := range calls {
		m, line := e.m, e.line
		switch {
		case h.state == StateReady && h.child == c && h.catalog == nil:
			if err == nil {
				err = errors.New("the listing was cut short")
			}
			h.toClient(jsonrpc.ErrorLine(m.ID, CodeServerUnavailable,
				fmt.Sprintf("server_unavailable: the server's tool catalog is not known (tools/list: %v), so the call was not forwarded; call again to list the tools again", err),
				map[string]any{"reason": "catalog_unknown", "tool": m.Tool, "currentEpoch": c.epoch}))
		case h.state == StateReady:
			h.forwardLocked(m, line)
		case h.state == StateDown:
			h.toClient(h.unavailableLocked(m))
		default:
			h.held = append(h.held, line)
		}
	}
}

// refreshState tracks re-lists asked for by a server's own
// notifications/tools/list_changed: at most one runs, later notifications
// fold into one more, and a restart preempts them (preemptRefreshLocked),
// so that a server that announces a change and then never answers
// tools/list cannot hold its own replacement back by InitTimeout per
// notification.
type refreshState struct {
	running   bool
	cancel    context.CancelFunc
	again     []byte // a notification that arrived while one ran
	preempted []byte // the notification whose re-list a restart cut short
	of        *child // the child that sent preempted
}

// requestRefreshLocked re-lists child c's tools after its notification
// line, then passes line on (nil: a re-list the host asked for itself,
// nothing to pass). h.mu is held.
func (h *Host) requestRefreshLocked(c *child, line []byte) {
	if h.refresh.running {
		h.refresh.again = line
		return
	}
	ctx, cancel := context.WithCancel(h.ctx)
	h.refresh.running, h.refresh.cancel = true, cancel
	go h.refreshCatalog(ctx, c, line)
}

// preemptRefreshLocked cuts a re-list short because a restart is about to
// take restartMu; resumeRefreshLocked asks for it again if the restart left
// child c in place. h.mu is held.
func (h *Host) preemptRefreshLocked() {
	if !h.refresh.running {
		return
	}
	h.refresh.cancel()
	h.logf("catalog re-list after the server's list_changed preempted by a restart")
}

func (h *Host) resumeRefreshLocked() {
	line, c := h.refresh.preempted, h.refresh.of
	h.refresh.preempted, h.refresh.of = nil, nil
	if line != nil && h.child == c && h.state == StateReady {
		h.requestRefreshLocked(c, line)
	}
}

// refreshCatalog re-lists after child c itself announced a change, then
// passes its notification on. A re-list preempted by a restart (ctx done)
// passes nothing: a restart that replaces c announces its own catalog,
// one that does not asks for the re-list again.
func (h *Host) refreshCatalog(ctx context.Context, c *child, line []byte) {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()
	var cat *Catalog
	var err error
	if ctx.Err() == nil {
		cat, err = h.fetchCatalog(ctx, c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	preempted := ctx.Err() != nil
	h.refresh.cancel()
	h.refresh.running = false
	again := h.refresh.again
	h.refresh.again = nil
	switch {
	case h.child != c:
		return // replaced meanwhile: the restart announced its own catalog
	case preempted:
		h.refresh.preempted, h.refresh.of = line, c
		if again != nil {
			h.refresh.preempted = again
		}
		return
	case err != nil:
		h.logf("epoch %s: re-list after the server's list_changed: %v", c.epoch, err)
	default:
		h.setCatalogLocked(c, cat)
	}
	if line != nil {
		h.toClient(line)
	}
	if again != nil {
		h.requestRefreshLocked(c, again)
	}
}

// recheckUnknown re-lists child c before a call to a tool its catalog
// lacks is refused: a server may add tools at runtime and announce them
// late (go-sdk waits before its list_changed) or never. The call is then
// decided again, once, against what the server lists now. The re-list
// holds no lock, so a restart is never held back by it; a catalog set
// meanwhile (a restart, the server's own list_changed) wins over it.
func (h *Host) recheckUnknown(c *child, m *jsonrpc.Message, line []byte) {
	h.mu.Lock()
	before := h.catalog
	h.mu.Unlock()
	cat, err := h.fetchCatalog(h.ctx, c)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.relisting, jsonrpc.IDKey(m.ID))
	if err != nil {
		h.logf("epoch %s: re-list for a call to an unknown tool: %v", c.epoch, err)
	} else if h.child == c && h.catalog == before {
		h.setCatalogLocked(c, cat)
	}
	switch {
	case h.state == StateReady && h.child == c:
		h.forwardOnceLocked(m, line, true)
	case h.state == StateReady:
		h.forwardLocked(m, line) // a new epoch decides with its own catalog
	case h.state == StateDown:
		h.toClient(h.unavailableLocked(m))
	default:
		h.held = append(h.held, line)
	}
}

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

// A server's prompts and resources are lists like its tools: an epoch
// change may change them. The host lists both (when the server declared
// them) at the session's first catalog fetch and at every restart, and
// after a restart sends notifications/prompts/list_changed or
// notifications/resources/list_changed when the list differs from the one
// the client could last have seen (MCP server/prompts, server/resources,
// "List Changed Notification"). A list the host does not know, because
// the server announced a change of its own or a fetch failed, counts as
// changed: a needless notification costs a re-list, a missing one a
// stale list.

// otherList is one of the lists besides tools.
type otherList struct {
	method, key, changed string
	declared             func(serverCaps) bool
	asked                func(*listen) bool // on a subscriptions/listen (2026-07-28)
}

var otherLists = []otherList{
	{"prompts/list", "prompts", "notifications/prompts/list_changed",
		func(c serverCaps) bool { return c.prompts }, func(l *listen) bool { return l.prompts }},
	{"resources/list", "resources", "notifications/resources/list_changed",
		func(c serverCaps) bool { return c.resources }, func(l *listen) bool { return l.resources }},
}

// listDigests lists child c's prompts and resources and returns the
// digest of each list by method; a list c did not declare is empty, one
// that could not be fetched is left out (unknown).
func (h *Host) listDigests(ctx context.Context, c *child) map[string]build.Digest {
	h.mu.Lock()
	caps := c.caps
	h.mu.Unlock()
	out := map[string]build.Digest{}
	for _, l := range otherLists {
		var items []json.RawMessage
		if l.declared(caps) {
			var err error
			if items, err = h.fetchPages(ctx, c, l.method, l.key); err != nil {
				h.logf("epoch %s: %v; the client is told the list may have changed", c.epoch, err)
				continue
			}
		}
		out[l.method] = h.digestList(l.method, items)
	}
	return out
}

// listSeen is a prompts or resources list as fetched and the digest of
// its RFC 8785 form.
type listSeen struct {
	items  []json.RawMessage
	digest build.Digest
}

// digestList returns the digest of the RFC 8785 form of the list items
// fetched by method, an array (of the array as sent, compacted, when it
// has none: a number beyond float64). A list fetched as it was the last
// time (a restart that changed nothing) is not canonicalised again.
func (h *Host) digestList(method string, items []json.RawMessage) build.Digest {
	if items == nil {
		items = []json.RawMessage{}
	}
	h.mu.Lock()
	seen, ok := h.listSeen[method]
	h.mu.Unlock()
	if ok && slices.EqualFunc(seen.items, items, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		return seen.digest
	}
	arr, _ := json.Marshal(items)
	d := build.DigestBytes(arr)
	if canon, err := jcs.Transform(arr); err == nil {
		d = build.DigestBytes(canon)
	}
	h.mu.Lock()
	if h.listSeen == nil {
		h.listSeen = map[string]listSeen{}
	}
	h.listSeen[method] = listSeen{items, d}
	h.mu.Unlock()
	return d
}

// setListsLocked makes lists the known prompts and resources of the
// session and returns the methods whose list differs from the last known.
func (h *Host) setListsLocked(lists map[string]build.Digest) []string {
	var changed []string
	for _, l := range otherLists {
		old, known := h.lists[l.method]
		now, ok := lists[l.method]
		if !known || !ok || old != now {
			changed = append(changed, l.method)
		}
		if ok {
			h.lists[l.method] = now
		} else {
			delete(h.lists, l.method)
		}
	}
	return changed
}

// forgetListLocked marks a list unknown after the server announced its own
// change: the next restart announces it whatever it finds.
func (h *Host) forgetListLocked(notification string) {
	for _, l := range otherLists {
		if l.changed == notification {
			delete(h.lists, l.method)
		}
	}
}

// announceListsLocked sends the list_changed of each changed list the
// client was told of: in the handshake era when the client's initialize
// result declared it, in 2026-07-28 on each subscriptions/listen that
// asked for it, tagged with its subscription id.
func (h *Host) announceListsLocked(changed []string) {
	for _, l := range otherLists {
		if !slices.Contains(changed, l.method) {
			continue
		}
		if h.stateless {
			for _, ls := range h.listens {
				if l.asked(ls) {
					h.toClient(jsonrpc.RequestLine(nil, l.changed,
						map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: ls.id}}))
				}
			}
			continue
		}
		if h.initialized && l.declared(h.caps) {
			h.toClient(jsonrpc.RequestLine(nil, l.changed, nil))
		}
	}
}
