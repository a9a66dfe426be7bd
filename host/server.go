package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// serverReq is a request a child sent to the client (sampling, roots,
// elicitation), forwarded under a host id so that the client's answer
// reaches the epoch that asked, and no other, even when two epochs used
// the same id.
type serverReq struct {
	child *child
	id    json.RawMessage // the child's own id
}

// fromChildMore handles one line from child c; more says another line of
// it was read already: an answer is then staged, and the last line of the
// burst writes them all to the client in one write.
func (h *Host) fromChildMore(c *child, line []byte, over *overflow, more bool) {
	h.fromChild(c, line, over, more)
	if !more {
		h.out.flush()
	}
}

// fromChild handles one line from child c (see fromChildMore).
func (h *Host) fromChild(c *child, line []byte, over *overflow, more bool) {
	h.trace("from server", line)
	if over != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.overflowLocked(c, over)
		return
	}
	// Invalid UTF-8 reaches the client as U+FFFD, as a JSON decoder reads
	// it: a strict client would refuse the whole line.
	line = jsonrpc.ValidUTF8(line)
	m, err := jsonrpc.Parse(line)
	if err != nil && lspHeader(line) {
		h.mu.Lock()
		h.lspFramedLocked(c)
		h.mu.Unlock()
	}
	if err != nil {
		h.logf("epoch %s: dropped a stdout line that is not JSON-RPC (%v): %.200q", c.epoch, err, line)
		h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{"bytes": strconv.Itoa(len(line)), "reason": "not JSON-RPC"})
		return
	}
	h.observeOnce(c)
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		h.droppedFromChild(c, line, m.ID, "not a JSON-RPC message (no method, no id)")
		return
	}
	if m.IsResponse() && isPrivateID(m.ID) {
		h.mu.Lock()
		ch, ok := h.private[jsonrpc.IDKey(m.ID)]
		delete(h.private, jsonrpc.IDKey(m.ID))
		h.mu.Unlock()
		if ok {
			ch <- line
		} else {
			h.droppedFromChild(c, line, m.ID, "a response to a host request that was answered already or never sent")
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c != h.child && h.drainAnswerLocked(c, m, line) {
		return // the old epoch's answer, delivered as it is (restart.go)
	}
	if c != h.child {
		// Only size and id: a result may hold anything, and clients keep
		// the host's stderr in their logs.
		id := "none"
		if jsonrpc.HasID(m.ID) {
			id = string(m.ID)
		}
		h.logf("epoch %s: dropped a late message from a stopped server (%d bytes, id %.64s; contents not logged)", c.epoch, len(line), id)
		return
	}

	h.childMore = more
	defer func() { h.childMore = false }()
	switch {
	case m.IsResponse():
		h.responseLocked(c, m, line)
	case m.IsRequest():
		h.serverRequestLocked(c, m, line)
	default:
		h.notificationLocked(c, m, line)
	}
}

// droppedFromChild logs and audits a message of child c that is not
// passed on, by size and id only: a result may hold anything, and clients
// keep the host's stderr in their logs.
func (h *Host) droppedFromChild(c *child, line []byte, id json.RawMessage, why string) {
	shown := "none"
	if jsonrpc.HasID(id) {
		shown = string(id)
	}
	h.logf("epoch %s: dropped a server message (%d bytes, id %.64s; contents not logged): %s", c.epoch, len(line), shown, why)
	fields := map[string]any{"bytes": strconv.Itoa(len(line)), "reason": why}
	if jsonrpc.HasID(id) {
		fields["id"] = printableID(id)
	}
	h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, fields)
}

// printableID is id as text for an audit record, at most 64 bytes.
func printableID(id json.RawMessage) string {
	s := strings.ToValidUTF8(string(id), "\ufffd")
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// overflowLocked drops a message of child c over the line limit; when it
// answers a request in flight, the client gets message_too_large instead.
func (h *Host) overflowLocked(c *child, over *overflow) {
	id := over.id()
	h.logf("epoch %s: dropped a server message over %d bytes (id %s)", c.epoch, h.opts.MaxLine, id)
	h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{"reason": "over the message limit"})
	if k := jsonrpc.IDKey(id); jsonrpc.HasID(id) && h.inflight[k] != nil && h.inflight[k].child == c {
		cl := h.inflight[k]
		delete(h.inflight, k)
		h.toClient(jsonrpc.ErrorLine(cl.id, CodeMessageTooLarge, fmt.Sprintf("message_too_large: the server's answer was over %d bytes and was dropped; the request ran, only its answer is lost: %s",
			h.opts.MaxLine, raiseMaxMessage("ask for less")), nil))
		if cl.tool != "" || cl.recorded {
			h.abortedLocked(cl, "message_too_large")
		}
	}
}

// responseLocked passes child c's answer to the client request in flight
// under its id, rewritten where the host must (rewriteResultLocked).
func (h *Host) responseLocked(c *child, m *jsonrpc.Message, line []byte) {
	k := jsonrpc.IDKey(m.ID)
	cl, ok := h.inflight[k]
	if !ok || cl.child != c {
		h.droppedFromChild(c, line, m.ID, "a response to an id no client request is waiting for (answered already, or never sent)")
		return
	}
	delete(h.inflight, k)
	if cl.method == "server/discover" && m.HasError {
		h.handshakeEra = true
	}
	if cl.method == "subscriptions/listen" {
		if l := h.listens[k]; l != nil && l.tools {
			// The host announces every epoch change on this
			// subscription whatever the server supports; a server
			// without listChanged ends it at once, which must not end
			// it for the client.
			return
		}
		delete(h.listens, k) // the server ended the subscription
	}
	if cl.tool != "" {
		h.audit.toolResult(c.epoch, h.run, cl.tool, toolError(m.Result), strconv.FormatInt(time.Since(cl.sent).Milliseconds(), 10))
	} else if cl.recorded {
		h.requestResultLocked(c, cl, m, line)
	}
	if m.HasResult {
		line = h.rewriteResultLocked(c, cl.method, line)
	}
	h.toClientStagedLocked(line)
}

// toClientStagedLocked is toClient for an answer of the server: staged
// while more of the server's lines were read at once (h.childMore), for
// fromChildMore to write with them.
func (h *Host) toClientStagedLocked(line []byte) {
	if !h.childMore {
		h.toClient(line)
		return
	}
	h.trace("to client", line)
	h.out.stage(withNewline(line))
}

// serverRequestLocked forwards a request of child c to the client under a
// host id, so that the answer reaches this epoch and no other.
func (h *Host) serverRequestLocked(c *child, m *jsonrpc.Message, line []byte) {
	h.nextPrivate++
	hid, _ := json.Marshal(fmt.Sprintf("%s%s:s%d", privatePrefix, c.epoch, h.nextPrivate))
	out, err := jsonrpc.ReplaceID(line, hid)
	if err != nil {
		h.logf("epoch %s: dropped a server request: %v", c.epoch, err)
		return
	}
	h.serverReqs[jsonrpc.IDKey(hid)] = &serverReq{child: c, id: m.ID}
	h.toClient(out)
}

// notificationLocked passes a notification of child c to the client; the
// server's own list_changed makes the host re-list first, and a re-sent
// subscription's second acknowledgement is swallowed.
func (h *Host) notificationLocked(c *child, m *jsonrpc.Message, line []byte) {
	switch m.Method {
	case "notifications/tools/list_changed":
		if h.state != StateReady {
			return // the host announces the new catalog itself when the restart is done
		}
		h.requestRefreshLocked(c, line)
		return
	case "notifications/cancelled":
		if line = h.serverCancelledLocked(c, m, line); line == nil {
			return
		}
	case "notifications/prompts/list_changed", "notifications/resources/list_changed":
		h.forgetListLocked(m.Method)
	case "notifications/subscriptions/acknowledged":
		k := subscriptionID(m.Params)
		if h.swallowAck[k] {
			delete(h.swallowAck, k) // the client saw the first acknowledgement
			return
		}
		if l := h.listens[k]; l != nil && l.tools {
			line = ackToolsListChanged(line)
		}
	}
	h.toClient(line)
}

// serverCancelledLocked maps a server's notifications/cancelled of its own
// request (an elicitation or sampling it gave up on) to the host id the
// client knows that request by, so that the client's dialog closes (MCP
// cancellation). A cancellation of a request the client never got, or
// that was answered, is dropped; any other passes unchanged.
func (h *Host) serverCancelledLocked(c *child, m *jsonrpc.Message, line []byte) []byte {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || !jsonrpc.HasID(p.RequestID) {
		return line
	}
	want := jsonrpc.IDKey(p.RequestID)
	for k, r := range h.serverReqs {
		if r.child != c || jsonrpc.IDKey(r.id) != want {
			continue
		}
		delete(h.serverReqs, k)
		hid, _ := json.Marshal(strings.TrimPrefix(k, "s")) // host ids are strings: idKey is "s" + the id
		out, err := jsonrpc.SetMember(line, hid, "params", "requestId")
		if err != nil {
			return nil
		}
		return out
	}
	h.logf("epoch %s: dropped the server's cancellation of request %.64s, which the client is not waiting on", c.epoch, p.RequestID)
	return nil
}

// rewriteResultLocked adjusts the few results the host must: initialize
// and server/discover always advertise tools.listChanged; tools/list
// results mark the client informed and, in the stateless era, carry
// ttlMs 0 so no client caches a catalog the next epoch may replace.
func (h *Host) rewriteResultLocked(c *child, method string, line []byte) []byte {
	switch method {
	case "initialize", "server/discover":
		h.everUp = true // a server started: the host no longer waits for a first build (firststart.go)
		c.answered = true
		out, caps, version, err := advertiseListChanged(line)
		if err != nil {
			h.logf("epoch %s: %s result passed unchanged: %v", c.epoch, method, err)
			return line
		}
		h.caps, c.caps = caps, caps
		if method == "initialize" {
			h.protocol, h.initDone = version, true
			if h.initialized {
				// The client's notifications/initialized came before
				// this answer, and its listing found no capabilities
				// yet: list now that the server has said them.
				h.fetchFirstCatalogLocked()
			}
		} else {
			h.stateless = true
			h.fetchFirstCatalogLocked()
		}
		return out
	case "tools/list":
		result, ok := jsonrpc.GetMember(line, "result")
		if !ok {
			return line
		}
		h.noteListedLocked(c, result)
		if !h.stateless {
			return line
		}
		out, err := jsonrpc.SetMember(line, json.RawMessage("0"), "result", "ttlMs")
		if err != nil {
			return line
		}
		return out
	}
	return line
}

// privateCall sends method to child c under a private id and waits for the
// answer's result. params (a JSON object, or nil) is sent as given: its
// numbers keep their exact text (a 20-digit integer, 1e400), since only its
// top level is decoded. In the stateless era the client's _meta (protocol
// version, capabilities) is added to params, as every request needs it.
func (h *Host) privateCall(ctx context.Context, c *child, method string, params json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	h.nextPrivate++
	id := fmt.Sprintf("%s%s:%d", privatePrefix, c.epoch, h.nextPrivate)
	meta := h.meta
	ch := make(chan []byte, 1)
	idb, _ := json.Marshal(id)
	h.private[jsonrpc.IDKey(idb)] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.private, jsonrpc.IDKey(idb))
		h.mu.Unlock()
	}()
	if meta != nil && method != "initialize" {
		obj := map[string]json.RawMessage{}
		if len(params) > 0 {
			if err := json.Unmarshal(params, &obj); err != nil {
				return nil, fmt.Errorf("%s: params: %v", method, err)
			}
		}
		obj["_meta"] = meta
		params, _ = json.Marshal(obj)
	}
	var p any
	if len(params) > 0 {
		p = params
	}
	c.send(jsonrpc.RequestLine(id, method, p))
	ctx, cancel := context.WithTimeout(ctx, h.opts.InitTimeout)
	defer cancel()
	select {
	case line := <-ch:
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("%s: %v", method, err)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: server answered error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		return resp.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: the server exited (%s)", method, c.exitStatus())
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: no answer within %s", method, h.opts.InitTimeout)
		}
		return nil, fmt.Errorf("%s: abandoned: the host is shutting down", method)
	}
}

// toolError reports whether a tools/call result carries isError: true
// (MCP tools, error handling). Only the result's top-level members are
// looked at, its content stepped over (jsonrpc.Member): an answer of any
// size costs a bounded scan, not a parse.
func toolError(result json.RawMessage) bool {
	v, ok := jsonrpc.Member(result, "isError")
	return ok && string(v) == "true"
}

// cancelServerRequestsLocked tells the client that the requests child c
// sent it (sampling, elicitation, roots) are over: the epoch that asked is
// gone and an answer would be dropped (MCP cancellation,
// notifications/cancelled).
func (h *Host) cancelServerRequestsLocked(c *child) {
	for k, r := range h.serverReqs {
		if r.child != c {
			continue
		}
		delete(h.serverReqs, k)
		id := strings.TrimPrefix(k, "s") // host ids are strings: idKey is "s" + the id
		h.toClient(jsonrpc.RequestLine(nil, "notifications/cancelled", map[string]any{
			"requestId": id, "reason": "execution epoch " + string(c.epoch) + " ended"}))
	}
}
