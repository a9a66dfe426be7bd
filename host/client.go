package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// call is a client request forwarded to a child and not yet answered.
type call struct {
	id     json.RawMessage // as the client sent it
	method string
	child  *child
	sent   time.Time
	tool   string // tools/call only
	// grant is the grant the call was dispatched under (nil: none needed);
	// issued holds the credential scopes a per-call approval already gave
	// this call (credentials.go). Both under h.mu.
	grant  *grant.Grant
	issued map[string]bool
	// credToken is the call's token for the credentials broker, sent to
	// the server in params._meta (credentials.go bindCallLocked); "" when
	// the project declares no scope.
	credToken string
	// recorded says a request other than tools/call was forwarded after
	// its request_forwarded record (requests.go).
	recorded bool
}

// listen is a client's subscriptions/listen request (MCP 2026-07-28): it
// lives as long as the subscription, so a restart re-sends it to the new
// child under the client's own id instead of failing it.
type listen struct {
	id    json.RawMessage // the client's id: the subscription id
	line  []byte
	tools bool // the client asked for tools list_changed on it
	// and for prompts and resources list_changed
	prompts, resources bool
}

// withNewline returns line ending in a newline. A line readLines passed on
// already has it just past its end (readLines leaves it there), so a
// large result is not copied again; any other line is copied.
func withNewline(line []byte) []byte {
	n := len(line)
	switch {
	case n > 0 && line[n-1] == '\n':
		return line
	case cap(line) > n && line[:n+1][n] == '\n':
		return line[:n+1]
	}
	return append(line[:n:n], '\n')
}

// toClient queues one message for the client, adding the newline. It never
// blocks: a client that stops reading must not stall the host, whose
// socket, restarts and approvals take the same lock.
func (h *Host) toClient(line []byte) {
	h.trace("to client", line)
	h.out.push(withNewline(line))
}

// readClient reads one client line strictly (jsonrpc.ParseClient) and
// returns the message to act on, or nil when the line was refused or
// dropped: over MaxLine (-31004 message_too_large), a batch or a malformed
// request (JSON-RPC 2.0 §5.1 codes, under the line's id where it can be
// read), not JSON, neither request, notification nor response, a
// tools/call sent as a notification, or a request under a host-private id
// (reserved_id). Each refusal is logged and, for a request, answered.
func (h *Host) readClient(line []byte, over *overflow) *jsonrpc.Message {
	if over != nil {
		h.logf("refused a client message over %d bytes", h.opts.MaxLine)
		h.toClient(jsonrpc.ErrorLine(over.id(), CodeMessageTooLarge, fmt.Sprintf("message_too_large: over %d bytes; not forwarded: %s", h.opts.MaxLine, raiseMaxMessage("send a smaller message")), nil))
		return nil
	}
	if jsonrpc.IsBatch(line) {
		// A batch (JSON-RPC 2.0 §6, MCP 2025-03-26 only) would need each
		// call checked and answered on its own; it is refused whole, and
		// nothing in it is forwarded.
		h.logf("refused a JSON-RPC batch: not supported")
		h.toClient(jsonrpc.ErrorLine(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported by mcpepoch host; nothing in the batch was forwarded: send each message on its own line", nil))
		return nil
	}
	m, err := jsonrpc.ParseClient(line)
	if err != nil {
		h.refuseClient(line, m, err)
		return nil
	}
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		h.logf("dropped a client message that is neither a request, a notification nor a response (id null, no method)")
		return nil
	}
	if m.Method == "tools/call" && !m.IsRequest() {
		h.logf("dropped a tools/call sent as a notification: a call must be a request, so that it is checked and answered")
		return nil
	}
	if m.IsRequest() && isPrivateID(m.ID) {
		h.toClient(jsonrpc.ErrorLine(m.ID, CodeReservedID, "reserved_id: request ids starting with \""+privatePrefix+"\" belong to mcpepoch host; the request was not forwarded: send it again under another id", nil))
		return nil
	}
	return m
}

// refuseClient answers a client line ParseClient refused with err: under
// its id, read strictly (m) or leniently, when it is a *ProtocolError, as
// a parse error under id null otherwise.
func (h *Host) refuseClient(line []byte, m *jsonrpc.Message, err error) {
	var pe *jsonrpc.ProtocolError
	if !errors.As(err, &pe) {
		h.logf("refused a client line that is not JSON-RPC: %v", err)
		h.toClient(jsonrpc.ErrorLine(nil, jsonrpc.CodeParseError, "parse error: "+err.Error()+"; nothing was forwarded: "+oneMessagePerLine, nil))
		return
	}
	h.logf("refused a client message: %v", err)
	id := jsonrpc.LenientID(line)
	if m != nil {
		id = m.ID // read strictly; LenientID cannot read a line nested too deep
	}
	h.toClient(jsonrpc.ErrorLine(id, pe.Code, pe.Msg+"; nothing was forwarded: "+oneMessagePerLine, nil))
}

// oneMessagePerLine is what a client whose line the host could not read
// does next (MCP stdio transport).
const oneMessagePerLine = "send one JSON-RPC 2.0 message per line, as MCP's stdio transport does"

// raiseMaxMessage ends a message_too_large: first, or raise the host's
// limit where the client launches it.
func raiseMaxMessage(first string) string {
	return first + ", or raise the limit with --max-message BYTES after host in the client's config (" + selfcmd.Cmd("host --max-message BYTES") + ")"
}

// fromClient handles one line from the client. What it forwards waits
// until h.mu is released: the records of its tools/calls (auditor.guard)
// and the lines themselves (lineQueue.stage). more says another client
// line was read already: they then wait for the last line of the burst,
// which writes the records of all of them in one write(2) and then the
// lines in one more, outside h.mu, so that a server's answers are not
// held up behind the client's writes.
func (h *Host) fromClient(line []byte, over *overflow, more bool) {
	staged := h.handleClient(line, over, more)
	if !more {
		h.audit.writeNow()
		for _, q := range staged {
			q.flush()
		}
	}
}

// handleClient decides what to do with one client line, under h.mu; at
// the last line of a burst it returns the queues the burst staged lines
// on, for fromClient to flush.
func (h *Host) handleClient(line []byte, over *overflow, more bool) (staged []*lineQueue) {
	h.trace("from client", line)
	m := h.readClient(line, over)
	if m == nil && more {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !more {
		defer func() { staged, h.clientStaged = h.clientStaged, nil }()
	}
	if m == nil {
		return
	}
	h.clientReading = true
	defer func() { h.clientReading = false }()
	if m.IsRequest() && h.inFlightLocked(jsonrpc.IDKey(m.ID)) {
		h.logf("refused a client request whose id %.64s is already in flight; not forwarded", m.ID)
		h.toClient(jsonrpc.ErrorLine(m.ID, jsonrpc.CodeInvalidRequest,
			"invalid request: id already in flight: the session's earlier request under this id is not answered yet; nothing was forwarded: send it under an id no request in flight uses", nil))
		return
	}
	if m.Method == "server/discover" && m.IsRequest() && h.handshakeEra {
		h.toClient(discoverUnsupported(m.ID))
		return
	}
	h.noteClientLocked(m, line)
	if m.IsResponse() {
		if h.answerElicitLocked(m, line) {
			return
		}
		h.answerServerLocked(m, line)
		return
	}
	if m.Method == "initialize" && m.IsRequest() && h.state != StateReady && h.waitsForFirstStartLocked() {
		h.holdInitLocked(m) // answered by the next server (firststart.go)
		return
	}
	if h.state == StateDown && !h.everUp && m.IsRequest() {
		if m.Method == "ping" {
			h.toClient(jsonrpc.ResultLine(m.ID, struct{}{}))
		} else {
			h.toClient(h.notBuiltLocked(m))
		}
		return
	}
	h.dispatchLocked(m, line)
	// The session's first catalog is fetched once the client has
	// initialized: on its notification, or on any later request from a
	// client that skipped it.
	if m.Method == "notifications/initialized" || (h.initParams != nil && m.IsRequest() && m.Method != "initialize") {
		h.fetchFirstCatalogLocked()
	}
	return
}

// dispatchLocked sends the client message m (line as received) where the
// host's state says: forwarded when ready, held while a server starts or
// recovers, refused while it is down. h.mu is held.
func (h *Host) dispatchLocked(m *jsonrpc.Message, line []byte) {
	switch {
	case h.state == StateReady:
		h.forwardLocked(m, line)
	case h.state == StateDown && h.idle && m.IsRequest():
		h.held = append(h.held, line) // released once the server runs again
		h.wakeLocked()
	case h.state == StateDown && (h.recovering || h.idle):
		h.held = append(h.held, line) // as during a rebuild, within the restart's bound
	case h.state == StateDown:
		if m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	case m.Method == "ping" && m.IsRequest():
		h.toClient(jsonrpc.ResultLine(m.ID, struct{}{})) // legacy ping: the host is alive
	default:
		h.held = append(h.held, line)
	}
}

// cancelWaitingLocked takes the request under id key that the client
// cancelled (notifications/cancelled) out of the lines held for a server
// (a restart, a recovery, an idle host) and the calls held for the
// identity to be computed again: a request the client gave up on before
// it was forwarded never reaches a server, and gets no answer (MCP
// cancellation). A tools/call so dropped is audited call_aborted. h.mu is
// held.
func (h *Host) cancelWaitingLocked(key string) {
	var ep epoch.Epoch
	if h.child != nil {
		ep = h.child.epoch
	}
	aborted := func(m *jsonrpc.Message, while string) {
		if m.Method == "tools/call" {
			h.audit.event(audit.TypeCallAborted, ep, h.run, map[string]any{audit.FieldTool: m.Tool,
				"reason": "cancelled by the client while " + while})
		}
	}
	for i, l := range h.held {
		if m, err := jsonrpc.ParseClient(l); err == nil && m.IsRequest() && jsonrpc.IDKey(m.ID) == key {
			h.held = slices.Delete(h.held, i, i+1)
			aborted(m, "held for a server to start")
			return
		}
	}
	for i, w := range h.verifying {
		if jsonrpc.IDKey(w.m.ID) == key {
			h.verifying = slices.Delete(h.verifying, i, i+1)
			aborted(w.m, "held for the identity to be computed again")
			return
		}
	}
}

// inFlightLocked reports whether a client request under id key is not
// answered yet: forwarded, held for the server, for the first catalog,
// for a re-list or for an approval. Request ids are unique among a
// requester's requests in flight (JSON-RPC 2.0 §4, MCP "Requests"): a
// second one under the same id could not be told from the first by its
// answer, so it is refused and the first goes on. h.mu is held.
func (h *Host) inFlightLocked(key string) bool {
	if h.inflight[key] != nil || h.relisting[key] {
		return true
	}
	for _, e := range h.early {
		if jsonrpc.IDKey(e.m.ID) == key {
			return true
		}
	}
	for _, a := range h.asks {
		for _, w := range a.waiters {
			if jsonrpc.IDKey(w.m.ID) == key {
				return true
			}
		}
	}
	for _, l := range h.held {
		if m, err := jsonrpc.Parse(l); err == nil && m.IsRequest() && jsonrpc.IDKey(m.ID) == key {
			return true
		}
	}
	for _, w := range h.verifying {
		if jsonrpc.IDKey(w.m.ID) == key {
			return true
		}
	}
	return false
}

// answerServerLocked sends the client's answer to a server→client
// request back, under the child's own id, to the epoch that asked, or
// nowhere.
func (h *Host) answerServerLocked(m *jsonrpc.Message, line []byte) {
	k := jsonrpc.IDKey(m.ID)
	r, ok := h.serverReqs[k]
	delete(h.serverReqs, k)
	if !ok || r.child != h.child {
		h.logf("dropped the client's answer to server request %s: the epoch that asked is gone", m.ID)
		return
	}
	out, err := jsonrpc.ReplaceID(line, r.id)
	if err != nil {
		h.logf("dropped the client's answer to server request %s: %v", m.ID, err)
		return
	}
	r.child.send(append(out, '\n'))
}

// noteClientLocked remembers what the host must replay or reuse: the
// initialize params, the initialized notification, the stateless era's
// _meta, subscriptions/listen requests and their cancellation.
func (h *Host) noteClientLocked(m *jsonrpc.Message, line []byte) {
	switch m.Method {
	case "initialize":
		h.initParams, h.initLine, h.initDone = m.Params, line, false
		h.armFirstWaitLocked()
	case "notifications/initialized":
		h.initialized = true
	case "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		if m.IsRequest() {
			h.noteSessionLocked(m)
		}
	case "subscriptions/listen":
		if m.IsRequest() {
			var p struct {
				Notifications struct {
					ToolsListChanged     bool `json:"toolsListChanged"`
					PromptsListChanged   bool `json:"promptsListChanged"`
					ResourcesListChanged bool `json:"resourcesListChanged"`
				} `json:"notifications"`
			}
			json.Unmarshal(m.Params, &p)
			n := p.Notifications
			h.listens[jsonrpc.IDKey(m.ID)] = &listen{id: m.ID, line: line, tools: n.ToolsListChanged,
				prompts: n.PromptsListChanged, resources: n.ResourcesListChanged}
		}
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			// A cancelled request is the client's to forget: a later restart
			// must not answer it again.
			delete(h.listens, jsonrpc.IDKey(p.RequestID))
			h.cancelHeldLocked(jsonrpc.IDKey(p.RequestID))
			h.cancelEarlyLocked(jsonrpc.IDKey(p.RequestID))
			h.cancelWaitingLocked(jsonrpc.IDKey(p.RequestID))
			// A held initialize is the client's to give up on before
			// the first server started (firststart.go).
			if cl := h.inflight[jsonrpc.IDKey(p.RequestID)]; cl != nil && (cl.method != "initialize" || !h.everUp) {
				delete(h.inflight, jsonrpc.IDKey(p.RequestID))
				if cl.tool != "" || cl.recorded {
					// Its server may still run it; an answer is dropped.
					h.abortedLocked(cl, "cancelled")
				}
				h.cancelDrainingLocked(cl, line)
			}
		}
	}
	if m.IsRequest() && len(m.Params) > 0 {
		// Only _meta is read: a call's arguments are stepped over.
		if raw, ok := jsonrpc.Member(m.Params, "_meta"); ok {
			h.noteMetaLocked(raw)
		}
	}
}

// noteMetaLocked keeps the stateless era's _meta of a request (its
// protocol version, capabilities and client info) when it names a
// protocol version.
func (h *Host) noteMetaLocked(raw json.RawMessage) {
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil || meta[metaProtocolVersion] == nil {
		return
	}
	keep := map[string]json.RawMessage{}
	for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo} {
		if v, ok := meta[k]; ok {
			keep[k] = v
		}
	}
	h.meta, _ = json.Marshal(keep)
}

// sessionRequest is a client request that sets state of the handshake
// era's session (the log level, a resource subscription): a new child
// gets it again after initialize, in the order the client sent them.
type sessionRequest struct {
	method string
	key    string // the method, and for a subscription its uri
	params json.RawMessage
}

// noteSessionLocked records a logging/setLevel or resources/(un)subscribe
// request of the client: a later one of the same key replaces the earlier
// one, an unsubscribe ends its subscription.
func (h *Host) noteSessionLocked(m *jsonrpc.Message) {
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(m.Params, &p)
	key := m.Method
	if m.Method != "logging/setLevel" {
		key = "resources/subscribe " + p.URI
	}
	h.session = slices.DeleteFunc(h.session, func(r sessionRequest) bool { return r.key == key })
	if m.Method != "resources/unsubscribe" {
		h.session = append(h.session, sessionRequest{method: m.Method, key: key, params: m.Params})
	}
}

// Keys of the per-request _meta of MCP 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

func (h *Host) unavailableLocked(m *jsonrpc.Message) []byte {
	return jsonrpc.ErrorLine(m.ID, CodeServerUnavailable, "server_unavailable: no server is running ("+h.downReason+"); the request was not forwarded: "+
		selfcmd.Cmd("status")+" shows the server's state and its last stderr lines",
		map[string]any{"reason": "server_unavailable", "method": m.Method, "requestId": m.ID, "detail": h.downReason})
}

// forwardLocked sends a client message to the current child, after the
// catalog checks for tools/call. h.mu is held and the state is ready.
func (h *Host) forwardLocked(m *jsonrpc.Message, line []byte) {
	h.forwardOnceLocked(m, line, false)
}

// forwardOnceLocked is forwardLocked; relisted says the catalog was just
// re-listed for this call, so an unknown tool is refused rather than
// re-listed again.
func (h *Host) forwardOnceLocked(m *jsonrpc.Message, line []byte, relisted bool) {
	if h.child == nil {
		if m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
		return
	}
	cl := &call{id: m.ID, method: m.Method, child: h.child, sent: time.Now()}
	var ticket int64 // of the tool_called record the call waits for
	if m.Method == "tools/call" && m.IsRequest() {
		if refusal := h.audit.refusal(m); refusal != nil {
			h.toClient(refusal) // no action without its audit record
			return
		}
		var rt *retry
		// Most calls are no retry: their params (arguments and all) are
		// decoded only when they carry a requestState.
		if _, ok := jsonrpc.Member(m.Params, "requestState"); ok {
			rt = parseRetry(m.Params)
		}
		if rt != nil {
			if m, line = h.stripRetryLocked(m, line); m == nil {
				return
			}
		}
		// ParseClient has read name and arguments strictly, once.
		if p := (callParams{Name: m.Tool, Arguments: m.Arguments}); p.Name != "" {
			if h.awaitCatalogLocked(m, line) {
				return
			}
			// A server whose tools/list paging was cut (fetchPages) is
			// not asked again per call: its listing cannot end.
			if h.tools != nil && h.tools[p.Name] == nil && !relisted && !h.child.listCut["tools/list"] {
				h.relisting[jsonrpc.IDKey(m.ID)] = true
				go h.recheckUnknown(h.child, m, line)
				return
			}
			if h.holdLocked(m, line, &p, rt) {
				return
			}
			refusal, g := h.authorizeLocked(m, &p)
			if refusal == nil && g != nil {
				refusal = h.imageCheckLocked(m, p.Name) // an exec in place (image.go)
			}
			if refusal == nil && g != nil && h.needsVerifyLocked(m) {
				h.holdUnverifiedLocked(m, line) // a change not hashed yet, or no notification vouches (identity.go)
				return
			}
			if refusal == nil {
				refusal = h.checkCallLocked(m, &p)
			}
			if refusal != nil {
				h.toClient(refusal)
				return
			}
			var err error
			if line, err = h.bindCallLocked(cl, line); err != nil {
				h.toClient(jsonrpc.ErrorLine(m.ID, jsonrpc.CodeInvalidParams, "invalid params: params._meta must be an object: "+err.Error(), nil))
				return
			}
			if g != nil && g.ExpiresWhen == grant.ExpiresPerCall {
				h.grants.Use(g, time.Now())
				h.saveGrantsLocked()
				h.audit.event(audit.TypeGrantRevoked, h.child.epoch, h.run, map[string]any{"grant": g.ID, "reason": grant.RevokedUsed})
			}
			cl.tool, cl.grant = p.Name, g
			grantID := ""
			if g != nil {
				grantID = string(g.ID)
			}
			ticket = h.audit.toolCalled(h.child.epoch, h.run, p.Name, h.audit.argsDigest(p.Arguments), grantID, !h.clientReading)
		}
	} else if m.IsRequest() && recordedRequest(m.Method) {
		var ok bool
		if ticket, ok = h.recordRequestLocked(m, cl); !ok {
			return
		}
	}
	if m.IsRequest() {
		h.inflight[jsonrpc.IDKey(m.ID)] = cl
		if m.Method == "initialize" && !h.child.answered {
			h.askedLocked(h.child, m.ID) // bounded (handshake.go)
		}
	}
	h.sendRecordedLocked(m, line, ticket)
}

// sendRecordedLocked sends line to the child once the audit record of
// ticket is in the log file (no action without its audit record): at once
// when it is already; through the child's stdin writer, which waits for
// it, while it is still to be written; never when it could not be, and
// then the call is answered with CodeAuditUnavailable. A line the client
// reader forwards (h.clientReading) is staged instead: fromClient writes
// it, with the rest of its burst, in one write once their records are
// written, outside h.mu and with no hand-off to the stdin writer.
func (h *Host) sendRecordedLocked(m *jsonrpc.Message, line []byte, ticket int64) {
	c := h.child
	line = withNewline(line)
	switch written, pending := h.audit.recorded(ticket); {
	case written && h.clientReading:
		c.in.stage(line)
		h.stagedLocked(c.in)
	case written:
		c.send(line)
	case pending:
		gate := func() bool { return h.audit.whenRecorded(ticket) }
		ready := func() bool { w, _ := h.audit.recorded(ticket); return w }
		refused := func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.refuseUnrecordedLocked(c, m)
		}
		if h.clientReading {
			c.in.stageGated(line, gate, ready, refused)
			h.stagedLocked(c.in)
		} else {
			c.in.pushGated(line, gate, ready, refused)
		}
	default:
		h.refuseUnrecordedLocked(c, m)
	}
}

// stagedLocked notes that the client reader staged a line on q, for
// fromClient to flush at the end of the burst.
func (h *Host) stagedLocked(q *lineQueue) {
	if !slices.Contains(h.clientStaged, q) {
		h.clientStaged = append(h.clientStaged, q)
	}
}

// refuseUnrecordedLocked answers a request m of child c whose record
// (tool_called, request_forwarded) could not be written, unless it was answered
// already (the child stopped, the client cancelled it).
func (h *Host) refuseUnrecordedLocked(c *child, m *jsonrpc.Message) {
	k := jsonrpc.IDKey(m.ID)
	if cl := h.inflight[k]; cl != nil && cl.child == c {
		delete(h.inflight, k)
		h.logf("refused %s %s: its audit record could not be written", m.Method, m.ID)
		h.toClient(h.audit.unrecorded(m))
	}
}
