package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/termsafe"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// State is a state of the host's state machine (see the package doc).
type State = localapi.State

// The host's states.
const (
	StateReady           = localapi.StateReady
	StateIdentityPending = localapi.StateIdentityPending
	StateCatalogReady    = localapi.StateCatalogReady
	StateDown            = localapi.StateDown
)

// Mode is what the host does when a build signal finds new code
// (localapi.Mode).
type Mode = localapi.Mode

// Restart modes.
const (
	ModeKeep   = localapi.ModeKeep
	ModeClose  = localapi.ModeClose
	ModeManual = localapi.ModeManual
)

// Options configure a Host.
type Options struct {
	// Dir is the project root: the child's working directory and the place
	// of .mcpepoch/. Absolute, symlinks resolved.
	Dir     string
	Command []string // launch command of the server
	Label   string   // server label shown to people
	// Spec describes how to compute identity (entry, lockfiles); Dir and
	// Command are filled from the fields above.
	Spec build.Spec
	// Mode is the restart mode; empty means ModeKeep.
	Mode Mode
	// Policy says which tools need a grant; nil means every tool does.
	Policy *grant.Policy
	// Grace is how long a stopping child gets after SIGTERM before SIGKILL
	// (default 5 s).
	Grace time.Duration
	// MaxLine is the largest message, in bytes, passed in either direction
	// (default 16 MiB).
	MaxLine int
	// InitTimeout bounds each request the host itself sends to a child
	// (initialize replay, tools/list); default 30 s.
	InitTimeout time.Duration
	// MaxCrashes is how many quick exits in a row (each within
	// QuickCrash of its start) the host restarts before it gives up
	// (default 5).
	MaxCrashes int
	QuickCrash time.Duration // default 10 s

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// call is a client request forwarded to a child and not yet answered.
type call struct {
	id     json.RawMessage // as the client sent it
	method string
	child  *child
	sent   time.Time
	tool   string // tools/call only
}

// serverReq is a request a child sent to the client (sampling, roots,
// elicitation), forwarded under a host id so that the client's answer
// reaches the epoch that asked, and no other, even when two epochs used
// the same id.
type serverReq struct {
	child *child
	id    json.RawMessage // the child's own id
}

// listen is a client's subscriptions/listen request (MCP 2026-07-28): it
// lives as long as the subscription, so a restart re-sends it to the new
// child under the client's own id instead of failing it.
type listen struct {
	id    json.RawMessage // the client's id: the subscription id
	line  []byte
	tools bool // the client asked for tools list_changed on it
}

// Host is one gateway: one client connection (agent run), one child at a
// time.
type Host struct {
	opts Options
	run  string // agent run id: a ULID assigned when the client connects

	out *lineQueue // the client's stdout, written by one goroutine

	// restartMu orders restarts, the initial catalog fetch and crash
	// recovery; grant checks will take it too.
	restartMu sync.Mutex
	ctx       context.Context
	cancel    context.CancelCauseFunc

	mu          sync.Mutex
	state       State
	stateSince  time.Time
	child       *child
	downReason  string
	inflight    map[string]*call      // client request id → call
	held        [][]byte              // client messages waiting for ready
	serverReqs  map[string]*serverReq // host id given to a server→client request → where it came from
	private     map[string]chan []byte
	nextPrivate int

	initParams  json.RawMessage // the client's initialize params, replayed to new children
	initLine    []byte          // the client's initialize request as sent
	initDone    bool            // the client received its initialize result
	initialized bool            // the client sent notifications/initialized
	protocol    string          // protocolVersion negotiated in the legacy era
	stateless   bool            // server/discover succeeded: MCP 2026-07-28
	meta        json.RawMessage // _meta of the client's latest stateless request
	listens     map[string]*listen
	swallowAck  map[string]bool // listen ids re-sent to a new child
	fetching    bool            // the first catalog fetch is under way

	catalog  *Catalog
	tools    map[string]*tool
	informed map[string]build.Digest // tool → definition the client was last given

	ended         *child // the last child that exited on its own, until replaced
	endedRevoked  int    // grants revoked when ended exited
	crashes       int    // quick exits in a row
	pendingManual bool   // ModeManual: a signal found new code

	versions sync.Map // runtime digest → version, so a restart does not run node --version again

	policy   *grant.Policy
	grants   *grant.Store
	pending  []*Pending // calls refused for lack of a grant, for the reviewer
	approved *snapshot  // what the person saw at the last approval
	audit    *auditor
}

// New returns a Host for opts, filling defaults.
func New(opts Options) *Host {
	if opts.Mode == "" {
		opts.Mode = ModeKeep
	}
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.MaxLine == 0 {
		opts.MaxLine = 16 << 20
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 30 * time.Second
	}
	if opts.MaxCrashes == 0 {
		opts.MaxCrashes = 5
	}
	if opts.QuickCrash == 0 {
		opts.QuickCrash = 10 * time.Second
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Policy == nil {
		opts.Policy = &grant.Policy{}
	}
	opts.Spec.Dir, opts.Spec.Command = opts.Dir, opts.Command
	now := time.Now()
	return &Host{
		opts: opts, run: epoch.NewID(now),
		state: StateDown, stateSince: now, downReason: "not started",
		inflight: map[string]*call{}, serverReqs: map[string]*serverReq{}, private: map[string]chan []byte{},
		listens: map[string]*listen{}, swallowAck: map[string]bool{}, informed: map[string]build.Digest{},
		policy: opts.Policy,
	}
}

// Run is the host's life: start the server, listen for build signals, pass
// messages until the client closes stdin or ctx ends, then stop the server's
// whole process group. It returns an error when the host cannot start (bad
// command, socket trouble) or when it closed the connection on purpose
// (ModeClose, a protocol version mismatch).
func (h *Host) Run(ctx context.Context) error {
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	defer h.cancel(nil)
	// A client that goes away makes writes to stdout fail with EPIPE instead
	// of killing the host before it can stop the server and close its logs.
	signal.Ignore(syscall.SIGPIPE)
	h.out = newLineQueue(h.opts.Stdout, func(err error) {
		h.logf("client stdout: %v: closing", err)
		h.cancel(nil)
	})
	defer h.out.close(time.Second)

	var err error
	if h.grants, err = grant.Open(layout.GrantStore(h.opts.Dir, h.run)); err != nil {
		return err
	}
	if h.audit, err = openAuditor(h.opts.Dir, h.logf); err != nil {
		return &AuditError{Path: layout.Audit(h.opts.Dir), Err: err}
	}
	defer h.audit.close()
	h.audit.event(audit.TypeClientConnected, "", h.run, map[string]any{"label": h.opts.Label, "pid": strconv.Itoa(os.Getpid())})

	id, err := h.identity()
	if err != nil {
		return err
	}
	h.warnMissing(id)
	c, err := h.start(id, epoch.New(time.Now()))
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.child = c
	// The first epoch of a session starts ready with its catalog unknown:
	// nothing has changed yet that a call could have been prepared against.
	// The catalog is fetched once the client has initialized.
	h.setState(StateReady)
	h.mu.Unlock()

	ln, err := notify.Listen(h.opts.Dir, h.run)
	if err != nil {
		h.stopCurrent()
		return err
	}
	defer ln.Close()
	go ln.Serve(h.ctx, h.localAPI().Serve)
	h.logf("agent run %s: listening on %s", h.run, ln.Path())

	go func() {
		readLines(h.opts.Stdin, h.opts.MaxLine, h.fromClient)
		h.cancel(nil)
	}()
	<-h.ctx.Done()
	cause := context.Cause(h.ctx)
	if cause == context.Canceled {
		cause = nil
		h.logf("client closed the connection: stopping the server")
		h.drain(2 * time.Second)
	}
	h.stopCurrent()
	os.Remove(h.recordPath())
	h.mu.Lock()
	for _, g := range h.grants.Live(time.Now()) {
		h.audit.event(audit.TypeGrantRevoked, g.ExecutionEpoch, h.run, map[string]any{"grant": g.ID, "reason": grant.RevokedRunEnded})
	}
	if n := h.grants.RevokeAll(grant.RevokedRunEnded, time.Now()); n > 0 {
		h.saveGrantsLocked()
	}
	h.mu.Unlock()
	h.audit.event(audit.TypeClientClosed, "", h.run, nil)
	return cause
}

// AuditError reports an audit log the host cannot append to; the host does
// not start without one.
type AuditError struct {
	Path string
	Err  error
}

func (e *AuditError) Error() string {
	return fmt.Sprintf("audit log %s: %v (check it with 'mcpepoch audit verify'; move it aside to start a new one)", e.Path, e.Err)
}

func (e *AuditError) Unwrap() error { return e.Err }

// logf writes one log line to stderr. Tool names and other text from the
// server go into it, so it is escaped for the terminal: a server cannot
// forge a log line or send escape sequences through the host's log.
func (h *Host) logf(format string, args ...any) {
	fmt.Fprintf(h.opts.Stderr, "mcpepoch host: %s\n", termsafe.EscapeText(fmt.Sprintf(format, args...)))
}

// toClient queues one message for the client, adding the newline. It never
// blocks: a client that stops reading must not stall the host, whose
// socket, restarts and approvals take the same lock.
func (h *Host) toClient(line []byte) {
	if n := len(line); n == 0 || line[n-1] != '\n' {
		line = append(line[:n:n], '\n')
	}
	h.out.push(line)
}

func (h *Host) setState(s State) {
	h.state, h.stateSince = s, time.Now()
}

// start launches the server under a new epoch with identity id (computed by
// the caller just before) and starts reading its stdout. It does not make
// the child current.
func (h *Host) start(id *build.Identity, ep epoch.Epoch) (*child, error) {
	c, err := startChild(h.opts.Command, h.opts.Dir, h.opts.Stderr, ep, id)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	go c.run(h.opts.MaxLine, func(line []byte, over *overflow) { h.fromChild(c, line, over) }, func() { h.childExited(c) })
	h.logf("epoch %s: started pid %d: %v (entry %s %s)", ep, c.pid, h.opts.Command, id.Entry.Path, id.Entry.Digest.Short())
	h.writeRecord(c)
	rec := h.record(c)
	fields := map[string]any{"pid": strconv.Itoa(c.pid), audit.FieldEntry: string(rec.EntryDigest),
		"runtime": rec.Runtime, "runtime_digest": string(rec.RuntimeDigest), "dir": rec.WorkingDirectory,
		"command": rec.LaunchCommand, "label": rec.ServerLabel}
	if rec.LockfileDigest != "" {
		fields["lockfile"] = string(rec.LockfileDigest)
	}
	h.audit.event(audit.TypeServerStarted, ep, h.run, fields)
	return c, nil
}

// ExecutionRecord is the host's record of the running epoch, kept in
// .mcpepoch/hosts/<agent run>.json while the host lives.
type ExecutionRecord = localapi.ExecutionRecord

func (h *Host) record(c *child) ExecutionRecord {
	rt := c.identity.Runtime.Path
	if v := c.identity.Runtime.Version; v != "" {
		rt = filepath.Base(rt) + " " + v
	}
	return ExecutionRecord{
		V: 1, ServerLabel: h.opts.Label, LaunchCommand: h.opts.Command,
		EntryDigest: c.identity.Entry.Digest, LockfileDigest: c.identity.LockfileDigest(),
		Runtime: rt, RuntimeDigest: c.identity.Runtime.Digest,
		WorkingDirectory: h.opts.Dir, Epoch: c.epoch, ProcessID: c.pid,
		StartedAt: c.started.UTC(), AgentRun: h.run,
	}
}

func (h *Host) recordPath() string { return layout.HostRecord(h.opts.Dir, h.run) }

func (h *Host) writeRecord(c *child) {
	p := h.recordPath()
	b, _ := json.MarshalIndent(h.record(c), "", "  ")
	err := layout.MkdirAll(filepath.Dir(p))
	if err == nil {
		err = atomicfile.Write(p, append(b, '\n'), 0o600)
	}
	if err != nil {
		h.logf("execution record: %v", err)
	}
}

// stopCurrent stops the current child, if any.
func (h *Host) stopCurrent() {
	h.mu.Lock()
	c := h.child
	h.child = nil
	h.goDownLocked("the host is shutting down")
	h.mu.Unlock()
	if c != nil {
		c.stop(h.opts.Grace)
	}
}

// fromClient handles one line from the client.
func (h *Host) fromClient(line []byte, over *overflow) {
	if over != nil {
		h.logf("refused a client message over %d bytes", h.opts.MaxLine)
		h.toClient(jsonrpc.ErrorLine(over.id(), CodeMessageTooLarge, fmt.Sprintf("message_too_large: over %d bytes; not forwarded", h.opts.MaxLine), nil))
		return
	}
	m, err := jsonrpc.ParseClient(line)
	var pe *jsonrpc.ProtocolError
	switch {
	case errors.As(err, &pe):
		h.logf("refused a client message: %v", err)
		h.toClient(jsonrpc.ErrorLine(jsonrpc.LenientID(line), pe.Code, pe.Msg, nil))
		return
	case err != nil:
		h.logf("refused a client line that is not JSON-RPC: %v", err)
		h.toClient(jsonrpc.ErrorLine(nil, jsonrpc.CodeParseError, "parse error: "+err.Error(), nil))
		return
	}
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		h.logf("dropped a client message that is neither a request, a notification nor a response (id null, no method)")
		return
	}
	if m.Method == "tools/call" && !m.IsRequest() {
		h.logf("dropped a tools/call sent as a notification: a call must be a request, so that it is checked and answered")
		return
	}
	if m.IsRequest() && isPrivateID(m.ID) {
		h.toClient(jsonrpc.ErrorLine(m.ID, CodeReservedID, "reserved_id: request ids starting with \""+privatePrefix+"\" belong to mcpepoch host", nil))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteClientLocked(m, line)
	if m.IsResponse() {
		// An answer to a server→client request goes back, under the
		// child's own id, to the epoch that asked, or nowhere.
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
		return
	}
	switch {
	case h.state == StateReady:
		h.forwardLocked(m, line)
	case h.state == StateDown:
		if m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	case m.Method == "ping" && m.IsRequest():
		h.toClient(jsonrpc.ResultLine(m.ID, struct{}{})) // legacy ping: the host is alive
	default:
		h.held = append(h.held, line)
	}
	// The session's first catalog is fetched once the client has
	// initialized: on its notification, or on any later request from a
	// client that skipped it.
	if m.Method == "notifications/initialized" || (h.initParams != nil && m.IsRequest() && m.Method != "initialize") {
		h.fetchFirstCatalogLocked()
	}
}

// noteClientLocked remembers what the host must replay or reuse: the
// initialize params, the initialized notification, the stateless era's
// _meta, subscriptions/listen requests and their cancellation.
func (h *Host) noteClientLocked(m *jsonrpc.Message, line []byte) {
	switch m.Method {
	case "initialize":
		h.initParams, h.initLine, h.initDone = m.Params, line, false
	case "notifications/initialized":
		h.initialized = true
	case "subscriptions/listen":
		if m.IsRequest() {
			var p struct {
				Notifications struct {
					ToolsListChanged bool `json:"toolsListChanged"`
				} `json:"notifications"`
			}
			json.Unmarshal(m.Params, &p)
			h.listens[jsonrpc.IDKey(m.ID)] = &listen{id: m.ID, line: line, tools: p.Notifications.ToolsListChanged}
		}
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			// A cancelled request is the client's to forget: a later restart
			// must not answer it again.
			delete(h.listens, jsonrpc.IDKey(p.RequestID))
			if cl := h.inflight[jsonrpc.IDKey(p.RequestID)]; cl != nil && cl.method != "initialize" {
				delete(h.inflight, jsonrpc.IDKey(p.RequestID))
			}
		}
	}
	if m.IsRequest() && len(m.Params) > 0 {
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Meta[metaProtocolVersion] != nil {
			keep := map[string]json.RawMessage{}
			for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo} {
				if v, ok := p.Meta[k]; ok {
					keep[k] = v
				}
			}
			h.meta, _ = json.Marshal(keep)
		}
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
	return jsonrpc.ErrorLine(m.ID, CodeServerUnavailable, "server_unavailable: no server is running ("+h.downReason+"); the request was not forwarded",
		map[string]any{"reason": "server_unavailable", "method": m.Method, "requestId": m.ID, "detail": h.downReason})
}

// forwardLocked sends a client message to the current child, after the
// catalog checks for tools/call. h.mu is held and the state is ready.
func (h *Host) forwardLocked(m *jsonrpc.Message, line []byte) {
	if h.child == nil {
		if m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
		return
	}
	cl := &call{id: m.ID, method: m.Method, child: h.child, sent: time.Now()}
	if m.Method == "tools/call" && m.IsRequest() {
		var p callParams
		if err := json.Unmarshal(m.Params, &p); err == nil && p.Name != "" {
			refusal, g := h.authorizeLocked(m, &p)
			if refusal == nil {
				refusal = h.checkCallLocked(m, &p)
			}
			if refusal != nil {
				h.toClient(refusal)
				return
			}
			if g != nil && g.ExpiresWhen == grant.ExpiresPerCall {
				h.grants.Use(g, time.Now())
				h.saveGrantsLocked()
				h.audit.event(audit.TypeGrantRevoked, h.child.epoch, h.run, map[string]any{"grant": g.ID, "reason": grant.RevokedUsed})
			}
			cl.tool = p.Name
			fields := map[string]any{audit.FieldTool: p.Name, audit.FieldArgsDigest: audit.ArgsDigest(p.Arguments)}
			if g != nil {
				fields["grant"] = g.ID
			}
			h.audit.event(audit.TypeToolCalled, h.child.epoch, h.run, fields)
		}
	}
	if m.IsRequest() {
		h.inflight[jsonrpc.IDKey(m.ID)] = cl
	}
	h.child.send(append(line, '\n'))
}

// fromChild handles one line from child c.
func (h *Host) fromChild(c *child, line []byte, over *overflow) {
	if over != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		id := over.id()
		h.logf("epoch %s: dropped a server message over %d bytes (id %s)", c.epoch, h.opts.MaxLine, id)
		h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{"reason": "over the message limit"})
		if k := jsonrpc.IDKey(id); jsonrpc.HasID(id) && h.inflight[k] != nil && h.inflight[k].child == c {
			cl := h.inflight[k]
			delete(h.inflight, k)
			h.toClient(jsonrpc.ErrorLine(cl.id, CodeMessageTooLarge, fmt.Sprintf("message_too_large: the server's answer was over %d bytes and was dropped", h.opts.MaxLine), nil))
		}
		return
	}
	m, err := jsonrpc.Parse(line)
	if err != nil {
		h.logf("epoch %s: dropped a stdout line that is not JSON-RPC (%v): %.200q", c.epoch, err, line)
		h.audit.event(audit.TypeChildOutputDropped, c.epoch, h.run, map[string]any{"bytes": strconv.Itoa(len(line)), "reason": "not JSON-RPC"})
		return
	}
	h.observeOnce(c)
	if m.IsResponse() && isPrivateID(m.ID) {
		h.mu.Lock()
		ch, ok := h.private[jsonrpc.IDKey(m.ID)]
		delete(h.private, jsonrpc.IDKey(m.ID))
		h.mu.Unlock()
		if ok {
			ch <- line
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c != h.child {
		h.logf("epoch %s: dropped a late message from a stopped server: %.200q", c.epoch, line)
		return
	}

	switch {
	case m.IsResponse():
		k := jsonrpc.IDKey(m.ID)
		cl, ok := h.inflight[k]
		if !ok || cl.child != c {
			h.logf("epoch %s: dropped a response to id %s, which no client request is waiting for", c.epoch, k)
			return
		}
		delete(h.inflight, k)
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
			h.audit.event(audit.TypeToolResult, c.epoch, h.run, map[string]any{audit.FieldTool: cl.tool,
				"is_error": toolError(line), "duration_ms": strconv.FormatInt(time.Since(cl.sent).Milliseconds(), 10)})
		}
		if m.HasResult {
			line = h.rewriteResultLocked(c, cl.method, line)
		}
		h.toClient(line)
	case m.IsRequest():
		h.nextPrivate++
		hid, _ := json.Marshal(fmt.Sprintf("%s%s:s%d", privatePrefix, c.epoch, h.nextPrivate))
		out, err := jsonrpc.ReplaceID(line, hid)
		if err != nil {
			h.logf("epoch %s: dropped a server request: %v", c.epoch, err)
			return
		}
		h.serverReqs[jsonrpc.IDKey(hid)] = &serverReq{child: c, id: m.ID}
		h.toClient(out)
	default: // notification
		switch m.Method {
		case "notifications/tools/list_changed":
			if h.state != StateReady {
				return // the host announces the new catalog itself when the restart is done
			}
			go h.refreshCatalog(c, line)
			return
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
}

// subscriptionID returns the idKey of params._meta's subscription id.
func subscriptionID(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(params, &p)
	return jsonrpc.IDKey(p.Meta[metaSubscriptionID])
}

// rewriteResultLocked adjusts the few results the host must: initialize
// and server/discover always advertise tools.listChanged; tools/list
// results mark the client informed and, in the stateless era, carry
// ttlMs 0 so no client caches a catalog the next epoch may replace.
func (h *Host) rewriteResultLocked(c *child, method string, line []byte) []byte {
	switch method {
	case "initialize", "server/discover":
		out, version, err := advertiseListChanged(line)
		if err != nil {
			h.logf("epoch %s: %s result passed unchanged: %v", c.epoch, method, err)
			return line
		}
		if method == "initialize" {
			h.protocol, h.initDone = version, true
		} else {
			h.stateless = true
			h.fetchFirstCatalogLocked()
		}
		return out
	case "tools/list":
		var resp map[string]json.RawMessage
		if json.Unmarshal(line, &resp) != nil {
			return line
		}
		h.noteListedLocked(resp["result"])
		if !h.stateless {
			return line
		}
		var result map[string]json.RawMessage
		if json.Unmarshal(resp["result"], &result) != nil {
			return line
		}
		result["ttlMs"] = json.RawMessage("0")
		resp["result"], _ = json.Marshal(result)
		out, err := json.Marshal(resp)
		if err != nil {
			return line
		}
		return out
	}
	return line
}

// childExited runs when c's process has been reaped.
func (h *Host) childExited(c *child) {
	h.mu.Lock()
	if c != h.child {
		h.mu.Unlock()
		return // stopped by a restart or shutdown: what it owed was answered then
	}
	h.child = nil
	h.ended = c
	status := c.exitStatus()
	h.logf("epoch %s: server pid %d exited on its own (%s)", c.epoch, c.pid, status)
	h.abortLocked(c, "server_exited", "")
	h.cancelServerRequestsLocked(c)
	// The epoch is over: its grants end with it, as on a rebuild, so that
	// the next call is refused as stale and names the right epoch.
	h.endedRevoked = h.revokeEpochLocked(c.epoch)
	if h.endedRevoked > 0 {
		h.logf("epoch %s: %d grant(s) revoked with the epoch", c.epoch, h.endedRevoked)
	}
	quick := time.Since(c.started) < h.opts.QuickCrash
	if quick {
		h.crashes++
	} else {
		h.crashes = 1
	}
	n := h.crashes
	if n > h.opts.MaxCrashes {
		h.goDownLocked(fmt.Sprintf("the server exited %d times in a row within %s of starting (last: %s); not restarting it again until a build signal or mcpepoch restart", n, h.opts.QuickCrash, status))
		h.logf("%s", h.downReason)
		h.mu.Unlock()
		return
	}
	h.goDownLocked("the server exited (" + status + "); restarting it")
	h.mu.Unlock()
	go h.recover(n)
}

// recover restarts the server after it exited on its own, with backoff;
// a start that fails counts as one more quick exit, so the host keeps
// trying (a binary briefly missing mid-build) until MaxCrashes, never
// spinning.
func (h *Host) recover(n int) {
	for {
		delay := time.Duration(100<<min(n-1, 6)) * time.Millisecond // 100 ms, 200 ms, … 6.4 s
		select {
		case <-time.After(delay):
		case <-h.ctx.Done():
			return
		}
		_, err := h.restart(h.ctx, "crash recovery", restartCrash)
		if err == nil {
			return
		}
		h.logf("crash recovery: %v", err)
		h.mu.Lock()
		if h.child != nil { // a build signal started one meanwhile
			h.mu.Unlock()
			return
		}
		h.crashes++
		n = h.crashes
		if n > h.opts.MaxCrashes {
			h.goDownLocked(fmt.Sprintf("the server could not be restarted %d times in a row (last: %v); not trying again until a build signal or mcpepoch restart", n, err))
			h.logf("%s", h.downReason)
			h.mu.Unlock()
			return
		}
		h.goDownLocked(fmt.Sprintf("the server could not be restarted (%v); trying again", err))
		h.mu.Unlock()
	}
}

// abortLocked answers every request in flight at child c with one error and
// forgets it: it is never retried (seed: "do not automatically repeat a
// write in the new process"; a timeout is not proof it did not run).
// subscriptions/listen requests are kept for re-sending when next is set.
func (h *Host) abortLocked(c *child, reason string, next epoch.Epoch) {
	for k, cl := range h.inflight {
		if cl.child != c {
			continue
		}
		if cl.method == "initialize" && next != "" {
			continue // kept: the next child answers it, the session has not begun
		}
		delete(h.inflight, k)
		if cl.method == "subscriptions/listen" && h.listens[k] != nil {
			continue // re-sent to the next child under the same id
		}
		data := map[string]any{
			"reason":        reason,
			"method":        cl.method,
			"requestId":     cl.id,
			"previousEpoch": c.epoch,
			"retry":         "not retried: it may or may not have taken effect; check the server's state, refresh tools/list, then decide whether to call again",
		}
		var msg string
		if reason == "server_exited" {
			data["exitStatus"] = c.exitStatus()
			msg = "server_restarted: the server exited (" + c.exitStatus() + ") while this request was in flight; it was not retried and may or may not have taken effect"
		} else {
			data["currentEpoch"] = next
			msg = "server_restarted: execution epoch changed while this request was in flight; it was not retried and may or may not have taken effect"
		}
		h.toClient(jsonrpc.ErrorLine(cl.id, CodeServerRestarted, msg, data))
		fields := map[string]any{"reason": reason, "method": cl.method, "request_id": string(cl.id)}
		if cl.tool != "" {
			fields[audit.FieldTool] = cl.tool
		}
		h.audit.event(audit.TypeCallAborted, c.epoch, h.run, fields)
	}
}

// goDownLocked records that no child runs and answers held requests.
func (h *Host) goDownLocked(reason string) {
	h.downReason = reason
	h.setState(StateDown)
	for _, line := range h.held {
		if m, err := jsonrpc.Parse(line); err == nil && m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	}
	h.held = nil
}

// privateCall sends method to child c under a private id and waits for the
// answer's result. In the stateless era the client's _meta (protocol
// version, capabilities) is added to params, as every request needs it.
func (h *Host) privateCall(ctx context.Context, c *child, method string, params map[string]any) (json.RawMessage, error) {
	h.mu.Lock()
	h.nextPrivate++
	id := fmt.Sprintf("%s%s:%d", privatePrefix, c.epoch, h.nextPrivate)
	if h.meta != nil && method != "initialize" {
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = h.meta
	}
	ch := make(chan []byte, 1)
	idb, _ := json.Marshal(id)
	h.private[jsonrpc.IDKey(idb)] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.private, jsonrpc.IDKey(idb))
		h.mu.Unlock()
	}()
	var p any
	if params != nil {
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

// toolError reports whether a tools/call response carries result.isError.
func toolError(line []byte) bool {
	var r struct {
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	json.Unmarshal(line, &r)
	return r.Result.IsError
}

// identity computes what the launch command will run now.
func (h *Host) identity() (*build.Identity, error) {
	spec := h.opts.Spec
	spec.Versions = func(d build.Digest) (string, bool) {
		v, ok := h.versions.Load(d)
		if !ok {
			return "", false
		}
		return v.(string), true
	}
	id, err := build.Compute(spec)
	if err == nil && id.Runtime.Version != "" {
		h.versions.Store(id.Runtime.Digest, id.Runtime.Version)
	}
	return id, err
}

// ackToolsListChanged rewrites a notifications/subscriptions/acknowledged
// line to say tools list_changed is honoured: the host sends it on every
// epoch change (MCP 2026-07-28 subscriptions/listen).
func ackToolsListChanged(line []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	var params map[string]json.RawMessage
	json.Unmarshal(msg["params"], &params)
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var notes map[string]json.RawMessage
	json.Unmarshal(params["notifications"], &notes)
	if notes == nil {
		notes = map[string]json.RawMessage{}
	}
	notes["toolsListChanged"] = json.RawMessage("true")
	params["notifications"], _ = json.Marshal(notes)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return out
}

// observeOnce reads /proc for child c after its first message (Linux): by
// then a wrapper has exec'd what really runs.
func (h *Host) observeOnce(c *child) {
	h.mu.Lock()
	first := !c.looked
	c.looked = true
	h.mu.Unlock()
	if !first {
		return
	}
	go func() {
		o := observe(c.pid, true)
		h.mu.Lock()
		c.observed = o
		h.mu.Unlock()
		if o != nil && len(o.Cmdline) > 0 && o.Cmdline[0] != "" {
			h.logf("epoch %s: pid %d runs %s (%s) as %q", c.epoch, c.pid, o.Exe, o.ExeDigest.Short(), o.Cmdline)
		}
	}()
}

// warnMissing says so when an argument of the launch command looks like a
// file the server needs and does not exist: usually the server was not
// built yet, and the identity then falls back to the executable itself.
func (h *Host) warnMissing(id *build.Identity) {
	for _, a := range h.opts.Command[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		ext := filepath.Ext(a)
		if !strings.Contains(a, "/") && ext != ".js" && ext != ".mjs" && ext != ".cjs" && ext != ".py" && ext != ".ts" {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(h.opts.Dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			h.logf("warning: %s does not exist (build the server first?); the identity's entry is %s", a, id.Entry.Path)
		}
	}
}

// drain waits, up to timeout, for the answers to requests in flight after
// the client closed its stdin: a one-shot client (echo … | mcpepoch host)
// writes its requests and closes at once, and still gets its answers.
func (h *Host) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		n := 0
		for _, cl := range h.inflight {
			if cl.method != "subscriptions/listen" {
				n++
			}
		}
		down := h.child == nil
		h.mu.Unlock()
		if n == 0 || down {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
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
