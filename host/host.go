package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/notify"
)

// State is a state of the host's state machine (see the package doc).
type State string

// The host's states.
const (
	StateReady           State = "ready"
	StateIdentityPending State = "identity-pending"
	StateCatalogReady    State = "catalog-ready"
	StateDown            State = "down" // no child: it exited, or could not start
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
	// Grace is how long a stopping child gets after SIGTERM before SIGKILL.
	Grace time.Duration
	// MaxLine is the largest message, in bytes, passed in either direction
	// (default 16 MiB).
	MaxLine int
	// InitTimeout bounds each request the host itself sends to a new child
	// (initialize replay, tools/list); default 30 s.
	InitTimeout time.Duration

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// call is a client request forwarded to a child and not yet answered.
type call struct {
	method string
	child  *child
	sent   time.Time
}

// Host is one gateway: one client connection (agent run), one child at a
// time.
type Host struct {
	opts Options
	run  string // agent run id: a ULID assigned when the client connects

	outMu sync.Mutex // serializes writes to the client

	restartMu sync.Mutex // orders restarts (and, later, grant checks)

	mu          sync.Mutex
	state       State
	stateSince  time.Time
	child       *child
	downReason  string
	inflight    map[string]*call  // client request id → call
	held        [][]byte          // client messages waiting for ready
	serverReqs  map[string]*child // server→client request id → the child that sent it
	private     map[string]chan []byte
	nextPrivate int
	initParams  json.RawMessage // the client's initialize params, replayed to new children
	initialized bool            // the client sent notifications/initialized
	protocol    string          // protocolVersion negotiated by the first child
	catalog     *Catalog
}

// New returns a Host for opts, filling defaults.
func New(opts Options) *Host {
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.MaxLine == 0 {
		opts.MaxLine = 16 << 20
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 30 * time.Second
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	opts.Spec.Dir, opts.Spec.Command = opts.Dir, opts.Command
	now := time.Now()
	return &Host{
		opts: opts, run: epoch.NewID(now),
		state: StateDown, stateSince: now,
		inflight: map[string]*call{}, serverReqs: map[string]*child{}, private: map[string]chan []byte{},
	}
}

// Run is the host's life: start the server, listen for build signals, pass
// messages until the client closes stdin or ctx ends, then stop the server's
// whole process group. An error is returned only when the host cannot start
// at all (bad command, socket trouble).
func (h *Host) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if err := h.launch(); err != nil {
		return err
	}
	h.mu.Lock()
	h.setState(StateReady)
	h.mu.Unlock()
	ln, err := notify.Listen(h.opts.Dir, h.run)
	if err != nil {
		h.stopCurrent()
		return err
	}
	defer ln.Close()
	go ln.Serve(ctx, h.handle)
	h.logf("agent run %s: listening on %s", h.run, ln.Path())

	go func() {
		readLines(h.opts.Stdin, h.opts.MaxLine, h.fromClient)
		cancel()
	}()
	<-ctx.Done()
	h.logf("client closed the connection: stopping the server")
	h.stopCurrent()
	os.Remove(h.recordPath())
	return nil
}

func (h *Host) logf(format string, args ...any) {
	fmt.Fprintf(h.opts.Stderr, "mcpepoch host: "+format+"\n", args...)
}

// toClient writes one newline-terminated message to the client.
func (h *Host) toClient(line []byte) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	if n := len(line); n == 0 || line[n-1] != '\n' {
		line = append(line, '\n')
	}
	h.opts.Stdout.Write(line)
}

func (h *Host) setState(s State) {
	h.state, h.stateSince = s, time.Now()
}

// launch computes the identity of what is about to run, starts it under a
// new epoch and makes it current. The caller holds restartMu or is Run
// before anything else runs.
func (h *Host) launch() error {
	id, err := build.Compute(h.opts.Spec)
	if err != nil {
		return err
	}
	ep := epoch.New(time.Now())
	c, err := startChild(h.opts.Command, h.opts.Dir, h.opts.Stderr, ep, id)
	if err != nil {
		return fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	h.mu.Lock()
	h.child = c
	h.mu.Unlock()
	go func() {
		readLines(c.stdout, h.opts.MaxLine, func(line []byte, tooLong bool) { h.fromChild(c, line, tooLong) })
		c.wait()
		h.childExited(c)
	}()
	h.logf("epoch %s: started pid %d: %s (entry %s %s)", ep, c.pid, h.opts.Command[0], id.Entry.Path, id.Entry.Digest.Short())
	h.writeRecord(c)
	return nil
}

// ExecutionRecord is the host's record of the running epoch, in the seed's
// shape, kept in .mcpepoch/hosts/<agent run>.json while the host lives.
type ExecutionRecord struct {
	ServerLabel      string       `json:"serverLabel"`
	LaunchCommand    []string     `json:"launchCommand"`
	EntryDigest      build.Digest `json:"entryDigest"`
	LockfileDigest   build.Digest `json:"lockfileDigest,omitempty"`
	Runtime          string       `json:"runtime"`
	RuntimeDigest    build.Digest `json:"runtimeDigest,omitempty"`
	WorkingDirectory string       `json:"workingDirectory"`
	Epoch            epoch.Epoch  `json:"epoch"`
	ProcessID        int          `json:"processId"`
	StartedAt        time.Time    `json:"startedAt"`
	AgentRun         string       `json:"agentRun"`
}

func (h *Host) record(c *child) ExecutionRecord {
	rt := c.identity.Runtime.Path
	if v := c.identity.Runtime.Version; v != "" {
		rt = filepath.Base(rt) + " " + v
	}
	return ExecutionRecord{
		ServerLabel: h.opts.Label, LaunchCommand: h.opts.Command,
		EntryDigest: c.identity.Entry.Digest, LockfileDigest: c.identity.LockfileDigest(),
		Runtime: rt, RuntimeDigest: c.identity.Runtime.Digest,
		WorkingDirectory: h.opts.Dir, Epoch: c.epoch, ProcessID: c.pid,
		StartedAt: c.started.UTC(), AgentRun: h.run,
	}
}

func (h *Host) recordPath() string {
	return filepath.Join(h.opts.Dir, ".mcpepoch", "hosts", h.run+".json")
}

func (h *Host) writeRecord(c *child) {
	p := h.recordPath()
	b, _ := json.MarshalIndent(h.record(c), "", "  ")
	err := os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = atomicfile.Write(p, append(b, '\n'), 0o600)
	}
	if err != nil {
		h.logf("execution record: %v", err)
	}
}

// stopCurrent stops the current child, if any, answering what it owes.
func (h *Host) stopCurrent() {
	h.mu.Lock()
	c := h.child
	h.child = nil
	h.setState(StateDown)
	h.downReason = "the host is shutting down"
	h.mu.Unlock()
	if c != nil {
		c.stop(h.opts.Grace)
	}
}

// fromClient handles one line from the client.
func (h *Host) fromClient(line []byte, tooLong bool) {
	if tooLong {
		h.logf("dropped a client message over %d bytes", h.opts.MaxLine)
		h.toClient(errorLine(nil, CodeMessageTooLarge, fmt.Sprintf("message_too_large: over %d bytes", h.opts.MaxLine), nil))
		return
	}
	m, err := parseMessage(line)
	if err != nil {
		h.logf("dropped a client line that is not JSON-RPC: %v", err)
		h.toClient(errorLine(nil, -32700, "parse error: "+err.Error(), nil))
		return
	}
	if m.isRequest() && isPrivateID(m.ID) {
		h.toClient(errorLine(m.ID, CodeReservedID, "reserved_id: request ids starting with \""+privatePrefix+"\" belong to mcpepoch host", nil))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m.Method {
	case "initialize":
		h.initParams = m.Params
	case "notifications/initialized":
		h.initialized = true
	}
	if m.isResponse() {
		// An answer to a server→client request goes back to the epoch that
		// asked, or nowhere.
		k := idKey(m.ID)
		c, ok := h.serverReqs[k]
		delete(h.serverReqs, k)
		if !ok || c != h.child {
			h.logf("dropped the client's answer to server request %s: its epoch is gone", k)
			return
		}
		c.send(line)
		return
	}
	if h.state != StateReady {
		if m.Method == "ping" && m.isRequest() {
			h.outMu.Lock()
			h.opts.Stdout.Write(resultLine(m.ID, struct{}{}))
			h.outMu.Unlock()
			return
		}
		if h.state == StateDown {
			if m.isRequest() {
				h.toClientLocked(errorLine(m.ID, CodeServerUnavailable, "server_unavailable: no server is running ("+h.downReason+"); rebuild, or restart the client", map[string]any{
					"reason": "server_unavailable", "method": m.Method, "requestId": m.ID, "detail": h.downReason,
				}))
			}
			return
		}
		h.held = append(h.held, line)
		return
	}
	h.forwardLocked(m, line)
}

// toClientLocked writes to the client while h.mu is held.
func (h *Host) toClientLocked(line []byte) { h.toClient(line) }

// forwardLocked sends a client message to the current child, tracking
// requests. h.mu is held and the state is ready.
func (h *Host) forwardLocked(m *message, line []byte) {
	if m.isRequest() {
		h.inflight[idKey(m.ID)] = &call{method: m.Method, child: h.child, sent: time.Now()}
	}
	h.child.send(append(line, '\n'))
}

// fromChild handles one line from child c.
func (h *Host) fromChild(c *child, line []byte, tooLong bool) {
	if tooLong {
		h.logf("epoch %s: dropped a server message over %d bytes", c.epoch, h.opts.MaxLine)
		return
	}
	m, err := parseMessage(line)
	if err != nil {
		h.logf("epoch %s: dropped a stdout line that is not JSON-RPC (%v): %.200q", c.epoch, err, line)
		return
	}
	if m.isResponse() && isPrivateID(m.ID) {
		h.mu.Lock()
		ch, ok := h.private[idKey(m.ID)]
		delete(h.private, idKey(m.ID))
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
	case m.isResponse():
		k := idKey(m.ID)
		cl, ok := h.inflight[k]
		if !ok || cl.child != c {
			h.logf("epoch %s: dropped a response to id %s, which no client request is waiting for", c.epoch, k)
			return
		}
		delete(h.inflight, k)
		if cl.method == "initialize" && bool(m.Result) {
			out, version, err := advertiseListChanged(line)
			if err != nil {
				h.logf("epoch %s: initialize result passed unchanged: %v", c.epoch, err)
			} else {
				line = out
				h.protocol = version
			}
		}
		h.toClient(line)
	case m.isRequest():
		h.serverReqs[idKey(m.ID)] = c
		h.toClient(line)
	default: // notification
		if m.Method == "notifications/tools/list_changed" && h.state != StateReady {
			return // the host announces the new catalog itself once the restart is done
		}
		h.toClient(line)
	}
}

// childExited runs when c's process has been reaped.
func (h *Host) childExited(c *child) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c != h.child {
		return // stopped by a restart or shutdown: what it owed was answered then
	}
	h.child = nil
	h.downReason = "the server exited: " + c.exitStatus()
	h.setState(StateDown)
	h.logf("epoch %s: server pid %d exited on its own (%s)", c.epoch, c.pid, c.exitStatus())
	h.abortLocked(c, "server_exited", "")
	for _, line := range h.held {
		if m, err := parseMessage(line); err == nil && m.isRequest() {
			h.toClient(errorLine(m.ID, CodeServerUnavailable, "server_unavailable: "+h.downReason, nil))
		}
	}
	h.held = nil
}

// abortLocked answers every request in flight at child c with one error and
// forgets them: they are never retried (seed: "do not automatically repeat a
// write in the new process").
func (h *Host) abortLocked(c *child, reason string, next epoch.Epoch) {
	for k, cl := range h.inflight {
		if cl.child != c {
			continue
		}
		delete(h.inflight, k)
		data := map[string]any{
			"reason":        reason,
			"method":        cl.method,
			"requestId":     json.RawMessage(k),
			"previousEpoch": c.epoch,
			"retry":         "not retried: it may or may not have taken effect; check the server's state, refresh tools/list, then decide whether to call again",
		}
		msg := "server_restarted: execution epoch changed while this request was in flight; it was not retried and may or may not have taken effect"
		if reason == "server_exited" {
			data["exitStatus"] = c.exitStatus()
			msg = "server_restarted: the server exited (" + c.exitStatus() + ") while this request was in flight; it was not retried and may or may not have taken effect"
		} else {
			data["currentEpoch"] = next
		}
		h.toClient(errorLine(json.RawMessage(k), CodeServerRestarted, msg, data))
	}
}

// privateCall sends method to child c under a private id and waits for the
// answer's result.
func (h *Host) privateCall(ctx context.Context, c *child, method string, params any) (json.RawMessage, error) {
	h.mu.Lock()
	h.nextPrivate++
	id := fmt.Sprintf("%s%s:%d", privatePrefix, c.epoch, h.nextPrivate)
	ch := make(chan []byte, 1)
	idb, _ := json.Marshal(id)
	h.private[idKey(idb)] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.private, idKey(idb))
		h.mu.Unlock()
	}()
	c.send(requestLine(id, method, params))
	ctx, cancel := context.WithTimeout(ctx, h.opts.InitTimeout)
	defer cancel()
	select {
	case line := <-ch:
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
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
		return nil, fmt.Errorf("%s: no answer within %s", method, h.opts.InitTimeout)
	}
}

// ErrNoChange is returned by Restart when the recomputed identity equals
// the running epoch's and the child is alive.
var ErrNoChange = errors.New("identity unchanged")
