// The last phases of a restart: catalog-ready, ready, a failed start, and the session replay to a new child.

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// catalogReady fetches the new child's catalog, when it declared tools,
// and its prompts and resources lists, and enters catalog-ready. A server
// without tools has no catalog: its calls pass unchecked and it answers
// them itself.
func (h *Host) catalogReady(ctx context.Context, c *child) error {
	h.mu.Lock()
	tools := c.caps.tools
	h.mu.Unlock()
	var cat *Catalog
	if tools {
		var err error
		if cat, err = h.fetchCatalog(ctx, c); err != nil {
			return h.failStart(c, err)
		}
	}
	lists := h.listDigests(ctx, c)
	h.mu.Lock()
	if cat != nil {
		h.setCatalogLocked(c, cat)
	} else {
		h.catalog, h.tools = nil, nil
	}
	h.changedLists = h.setListsLocked(lists)
	h.setState(StateCatalogReady)
	h.mu.Unlock()
	return nil
}

// readyLocked enters ready with child c: the client is told the catalog
// may have changed (unless announce is false: a same-epoch relaunch whose
// catalog revision stayed), then the held messages are forwarded in order.
func (h *Host) readyLocked(c *child, announce bool) error {
	if h.child != c {
		return fmt.Errorf("epoch %s: the server exited while starting (%s)", c.epoch, c.exitStatus())
	}
	h.setState(StateReady)
	h.recovering, h.idle, h.gaveUp = false, false, false
	if announce {
		h.announceLocked()
	}
	h.announceListsLocked(h.changedLists)
	h.changedLists = nil
	h.releaseAbortsLocked() // after list_changed (drain.go)
	if h.initParams != nil && !h.initDone {
		h.sendInitLocked(c) // one that arrived after startPending
	}
	held := h.held
	h.held = nil
	for _, line := range held {
		// A held line passed ParseClient once; it is read the same way
		// again, tools/call name and arguments included.
		if m, err := jsonrpc.ParseClient(line); err == nil {
			h.forwardLocked(m, line)
		}
	}
	return nil
}

// announceLocked tells the client the catalog may have changed: one
// notifications/tools/list_changed, plain in the legacy era (after
// notifications/initialized), and in the 2026-07-28 era one per
// subscriptions/listen that asked for it, tagged with its subscription id.
func (h *Host) announceLocked() {
	if h.stateless {
		for _, l := range h.listens {
			if l.tools {
				h.toClient(jsonrpc.RequestLine(nil, "notifications/tools/list_changed",
					map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: l.id}}))
			}
		}
		return
	}
	if h.initialized && h.caps.tools {
		h.toClient(jsonrpc.RequestLine(nil, "notifications/tools/list_changed", nil))
	}
}

// failStart stops a new child that could not be brought to ready. A
// protocol version mismatch closes the connection (the host must not mix
// versions in one session); anything else leaves the host down.
func (h *Host) failStart(c *child, err error) error {
	h.logf("epoch %s: %v", c.epoch, err)
	h.mu.Lock()
	if h.child == c {
		h.child = nil
	}
	h.abortLocked(c, "server_exited", "")
	h.goDownLocked(err.Error())
	h.mu.Unlock()
	c.stop(h.opts.Grace)
	var pm *ProtocolMismatchError
	if errors.As(err, &pm) {
		h.cancel(err)
	}
	return &startError{err: err, c: c}
}

// ProtocolMismatchError reports a new child that negotiated another protocol
// version than the client's session uses.
type ProtocolMismatchError struct {
	Session, Server string
}

func (e *ProtocolMismatchError) Error() string {
	return fmt.Sprintf("initialize replay: the new server negotiated protocol %q but the client's session uses %q; closing the connection rather than mixing versions", e.Server, e.Session)
}

// reinitialize replays the client's initialize to a new child under a
// private id, checks it negotiates the same protocolVersion, sends
// notifications/initialized and replays the session's log level and
// resource subscriptions in the order the client sent them.
func (h *Host) reinitialize(ctx context.Context, c *child, params json.RawMessage, initialized bool) error {
	// The client's params are replayed as it sent them, never decoded into
	// Go numbers: a 20-digit integer stays exact, 1e400 stays 1e400.
	raw, err := h.privateCall(ctx, c, "initialize", params)
	if err != nil {
		return fmt.Errorf("initialize replay: %w", err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(raw, &res)
	_, caps, _, _ := advertiseListChanged(append(append([]byte(`{"result":`), raw...), '}'))
	h.mu.Lock()
	want := h.protocol
	c.caps, c.answered = caps, true
	h.mu.Unlock()
	if want != "" && res.ProtocolVersion != want {
		return &ProtocolMismatchError{Session: want, Server: res.ProtocolVersion}
	}
	if !initialized {
		return nil
	}
	c.send(jsonrpc.RequestLine(nil, "notifications/initialized", nil))
	h.mu.Lock()
	session := slices.Clone(h.session)
	h.mu.Unlock()
	for _, r := range session {
		if err := h.replayRecorded(ctx, c, r); err != nil {
			h.logf("epoch %s: replaying the client's %s: %v", c.epoch, r.key, err)
		}
	}
	return nil
}
