package host

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

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
