package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"

	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/credbroker"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/pipes"

	"maps"
	"path/filepath"
	"strconv"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// child is one server process: one execution epoch.
type child struct {
	epoch    epoch.Epoch
	identity *build.Identity
	cmd      *exec.Cmd
	pid      int
	started  time.Time
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	stderr   *os.File      // read end of the server's stderr, passed to the host's (logsink.go)
	errDone  chan struct{} // closed once all of stderr is passed on
	tail     *stderrTail   // the last lines of stderr (stderrtail.go)
	in       *lineQueue    // to stdin
	tmp      *serverTmp    // the server's TMPDIR (serverTemp), removed once it exits; nil for none

	done    chan struct{} // closed once the process is reaped
	waitErr error         // set before done is closed

	guard *childproc.Guard // kills the group if the host dies without stopping it; nil when it does not watch it
	// broker is the epoch's credentials broker (credentials.go); nil when
	// the project declares no scope or it could not listen.
	broker *credbroker.Broker
	// envScopes are the deliver = "env" scopes whose variable the process
	// was started with (envdeliver.go).
	envScopes []string

	observed *Observed       // set once, after the first message (h.mu)
	looked   bool            // observation started (h.mu)
	reaped   bool            // childExited ran for it (h.mu)
	caps     serverCaps      // what its initialize or discover result declared (h.mu)
	listCut  map[string]bool // the list methods whose paging it cut short, told once (h.mu; catalog.go)
	drift    []string        // what of its identity changed on disk while it ran, once seen (h.mu; identity.go)
	// drained, while the restart that replaces it drains it (restart.go),
	// is closed once it owes no answer (h.mu).
	drained     chan struct{}
	drainClosed bool
	// answered: it answered initialize or server/discover, the client's
	// or the host's replay (status.go says starting until then; h.mu).
	answered bool
	asked    bool // the client's initialize was sent to it (h.mu)
	lsp      bool // it wrote a Content-Length header (h.mu; handshake.go)
	// handshake is why the client's initialize was answered for it, once
	// it was (h.mu; handshake.go).
	handshake string
	// driftRevoked counts the grants the drift revoked: the replacement's
	// outcome counts them with its own (h.mu).
	driftRevoked int
	// verified is the tree watcher's Generation read before the last
	// identity computed for it that matched its own: when the Generation
	// differs, its identity is unverified (h.mu; identity.go).
	verified uint64
	// image is its process image read after its first message (imaged
	// set then, when the platform gives one); reloaded says how it
	// changed since, once a granted call found it did (h.mu; image.go).
	image    childproc.Image
	imaged   bool
	reloaded string
	// first is set for the session's first epoch, whose launch check
	// (identity.go firstLaunchCheck) runs once, from its first message
	// or its first catalog, whichever comes first: firstOnce starts it,
	// firstDone receives its answer, and launchChecked is set once
	// fetchFirstCatalogLocked's goroutine (under restartMu) took it.
	first         bool
	firstOnce     sync.Once
	firstDone     chan string
	launchChecked bool
}

// startChild launches command in dir in a new process group (so a stop
// reaches the server's own children, e.g. under "sh -c") with the host's
// environment, watched by guard, which kills the group if the host dies
// without stopping it (childproc.Guard). The server's stderr is a pipe of the host's,
// copied into stderr (the host's log sink, which never blocks). env
// is the child's environment; nil means the host's own.
func startChild(command []string, dir string, stderr io.Writer, guard *childproc.Guard, ep epoch.Epoch, id *build.Identity, env []string) (*child, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = dir
	if id != nil && len(id.LaunchEnv) > 0 {
		// What the identity asks the server to run with, so that it does
		// not rewrite its own hashed code (PYTHONDONTWRITEBYTECODE).
		if env == nil {
			env = os.Environ()
		}
		env = append(slices.Clip(env), id.LaunchEnv...)
	}
	cmd.Env = env
	cmd.SysProcAttr = childproc.ProcAttr()
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = errW
	defer errW.Close() // the server has its own copy once started
	// The server's stdin is a pipe of the host's own (not StdinPipe's
	// wrapper), so that its queue can write small lines at once
	// (pipes.TryWriter).
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		errR.Close()
		return nil, err
	}
	cmd.Stdin = stdinR
	defer stdinR.Close() // the server has its own copy once started
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		errR.Close()
		return nil, err
	}
	if f, ok := stdout.(*os.File); ok {
		pipes.Grow(f)
	}
	if err := childproc.StartOwn(cmd); err != nil {
		stdin.Close()
		errR.Close()
		return nil, err
	}
	c := &child{epoch: ep, identity: id, cmd: cmd, pid: cmd.Process.Pid, started: time.Now(),
		stdin: stdin, stdout: stdout, stderr: errR, errDone: make(chan struct{}), tail: &stderrTail{}, done: make(chan struct{})}
	go func() {
		passStderr(errR, stderr, c.tail)
		close(c.errDone)
	}()
	if err = guard.Watch(c.pid); err == nil {
		c.guard = guard
	} else {
		fmt.Fprintf(stderr, "mcpepoch host: warning: no guard for process group %d (%v): if the host is killed, what the server started in its group may outlive it\n", c.pid, err)
	}
	c.in = newOwnPipeQueue(stdin, func(error) { stdin.Close() })
	return c, nil
}

// readDrain is how long, after the server process is reaped, the host keeps
// reading what it wrote before exiting. A process that left the group
// (setsid) may hold the pipe open forever; the host stops reading then.
const readDrain = 500 * time.Millisecond

// run reads the server's stdout with fn and reaps the process, then calls
// exited. The process is reaped as soon as it exits, not when its stdout
// closes, so a descendant that keeps the pipe open cannot keep the host
// waiting; what the server wrote before exiting is still read, for up to
// readDrain.
func (c *child) run(max int, fn func(line []byte, over *overflow, more bool), exited func()) {
	readDone := make(chan struct{})
	go func() {
		readLinesMore(c.stdout, max, fn)
		close(readDone)
	}()
	state, err := c.cmd.Process.Wait()
	childproc.Forget(c.pid)
	switch {
	case err != nil:
		c.waitErr = err
	case !state.Success():
		c.waitErr = &exec.ExitError{ProcessState: state}
	}
	drained := time.NewTimer(readDrain)
	defer drained.Stop()
	select {
	case <-readDone:
	case <-drained.C:
		c.stdout.Close() // unblocks the reader
		<-readDone
		c.stderr.Close()
	}
	select {
	case <-c.errDone:
	case <-drained.C:
	}
	c.stderr.Close() // a descendant that keeps it open is read no more
	<-c.errDone
	close(c.done)
	exited()
}

// send queues line for the server's stdin without blocking: a server that
// stops reading must not stall the host's restart path.
func (c *child) send(line []byte) { c.in.push(line) }

// closeStdin ends the server's input once what is queued is written (or at
// once, if the server does not read it).
func (c *child) closeStdin() {
	go func() {
		c.in.close(stdinWait)
		c.stdin.Close()
	}()
}

// stdinWait is how long a stopping server gets to exit on its own after its
// stdin closes, before SIGTERM (MCP lifecycle, stdio shutdown).
const stdinWait = 500 * time.Millisecond

// stop shuts the server down as the MCP lifecycle asks for stdio: close its
// stdin, then SIGTERM to its process group, then SIGKILL after grace. It
// returns once the leader is reaped and no process of the group is left
// (bounded: a group member the host cannot reap, a zombie say, is waited
// for at most grace more), and, on Linux, once the orphans reparented to
// the host are killed (childproc.KillOrphans).
func (c *child) stop(grace time.Duration) {
	c.closeStdin()
	pgid := c.pid
	select {
	case <-c.done:
	case <-time.After(min(stdinWait, grace)):
		signalGroup(pgid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(grace):
			signalGroup(pgid, syscall.SIGKILL)
			<-c.done // SIGKILL cannot be ignored; reaping does not wait for stdout
		}
	}
	c.endGroup(grace)
	childproc.KillOrphans()
}

// endGroup stops what is left of the group once its leader is reaped (a
// shell's children, a background job): SIGTERM, then SIGKILL after
// grace; then the guard forgets the group. Bounded by twice grace.
func (c *child) endGroup(grace time.Duration) {
	defer c.guard.Unwatch(c.pid)
	pgid := c.pid
	if !groupAlive(pgid) {
		return
	}
	signalGroup(pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	signalGroup(pgid, syscall.SIGKILL)
	deadline = time.Now().Add(grace)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		syscall.Kill(-pgid, sig)
	}
}

// groupAlive reports whether any process of group pgid still exists and
// is not a zombie: a zombie runs nothing, and its reaping is up to its new
// parent, which may never do it (see childproc.GroupHasLive).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if !(err == nil || errors.Is(err, syscall.EPERM)) {
		return false
	}
	return childproc.GroupHasLive(pgid)
}

// exitStatus describes how the process ended, e.g. "exit status 7".
func (c *child) exitStatus() string {
	if c.waitErr == nil {
		return "exit status 0"
	}
	return c.waitErr.Error()
}

// overflow describes a line longer than the limit: its first and last
// bytes, kept so the JSON-RPC id can still be found and answered.
type overflow struct {
	head, tail []byte
}

// overflowKeep is how many bytes of each end of an over-long line are kept.
const overflowKeep = 4096

// idPatterns finds the id in the kept ends of an over-long line; compiled
// on first use, not at start.
var idPatterns = sync.OnceValues(func() (head, tail *regexp.Regexp) {
	return regexp.MustCompile(`^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)\s*[,}]`),
		regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)
})

// id returns the top-level JSON-RPC id of the over-long message when it
// stands first or last in the object (as the SDKs write it) and is valid
// JSON, else nil. The patterns only find where an id stands: what they
// match may still be spelled in a way JSON forbids (a leading zero, a raw
// control character, an unknown escape), and such an id is never echoed.
func (o *overflow) id() json.RawMessage {
	idInHead, idInTail := idPatterns()
	for _, m := range [][][]byte{idInHead.FindSubmatch(o.head), idInTail.FindSubmatch(o.tail)} {
		if m != nil {
			if json.Valid(m[1]) {
				return json.RawMessage(m[1])
			}
			return nil
		}
	}
	return nil
}

// Sizes of readLines' buffer: it starts at readChunk and grows to hold
// the longest line in progress (up to the limit), by doubling, or at once
// to the size of the last line over readKeep, the likely size of the next
// long one. A buffer of up to readKeep is kept and its lines copied out;
// a line over readKeep is handed to fn in the buffer it was read into,
// not copied, and reading goes on in a buffer of readChunk, as it does
// once a buffer over readKeep is left with little in it. (Handing over
// lines of 256 KiB made 1 MiB results slower: the kept buffer takes a
// whole pipe's worth in one read.)
const (
	readChunk = 64 << 10
	readKeep  = 4 << 20
)

// readLinesMore calls fn with each line read from r, without its
// newline; fn owns the slice, and the newline stays in place just past
// its end (see withNewline), so that forwarding it needs no copy. Lines
// are read with large reads into one buffer that is reused, and each
// complete line is copied out of it once, or, when over readKeep, handed
// over in it. A line longer than max bytes is not passed on: fn gets nil
// and an *overflow (its first and last bytes) instead, and the rest of it
// is not kept. fn also learns whether another complete line was read
// already (more), so that it may leave work for the last of them: a burst
// of calls read at once then shares one write of their audit records. It
// returns at EOF or on a read error; how reads are cut does not change
// what fn sees.
func readLinesMore(r io.Reader, max int, fn func(line []byte, over *overflow, more bool)) {
	buf := make([]byte, 0, readChunk)
	var over *overflow
	long := 0 // the size of the last line over readKeep, newline and all
	for {
		if len(buf) == cap(buf) {
			grow := min(cap(buf), max+2-len(buf)+1)
			if want := min(long+readChunk, max+2) - len(buf); want > grow {
				grow = want // a long line again, likely as long as the last: one allocation
			}
			buf = slices.Grow(buf, grow)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		scan := len(buf)
		buf = buf[:scan+n]
		start := 0
		for i := bytes.IndexByte(buf[scan:], '\n'); i >= 0; {
			end := scan + i + 1
			next := bytes.IndexByte(buf[end:], '\n')
			if seg := buf[start:end:end]; over == nil && len(seg) > readKeep && len(trimNL(seg)) <= max {
				// Handed over as it lies: what follows it moves to a
				// buffer of its own.
				long = len(seg)
				buf = append(make([]byte, 0, readChunk+len(buf)-end), buf[end:]...)
				fn(trimNL(seg), nil, next >= 0)
				start, scan, i = 0, 0, next
				continue
			}
			deliver(buf[start:end], max, over, fn, next >= 0)
			over, start, scan, i = nil, end, end, next
		}
		switch rest := buf[start:]; {
		case over != nil:
			over.add(rest)
			buf = buf[:0]
		case len(rest) > max+1: // over the limit even if it ends in \r\n
			over = &overflow{}
			over.add(rest)
			buf = buf[:0]
		case start > 0:
			buf = buf[:copy(buf, rest)]
		}
		if cap(buf) > readKeep && len(buf) < readChunk {
			buf = append(make([]byte, 0, readChunk), buf...)
		}
		if err != nil {
			if len(buf) > 0 || over != nil {
				deliver(buf, max, over, fn, false)
			}
			return
		}
	}
}

// deliver passes one line (with its newline, unless the input ended
// without one) to fn: as a copy, as an overflow, or not at all when it is
// empty.
func deliver(seg []byte, max int, over *overflow, fn func(line []byte, over *overflow, more bool), more bool) {
	if over == nil && len(trimNL(seg)) > max {
		over = &overflow{}
	} else if over == nil {
		line := trimNL(seg)
		if len(line) == 0 {
			return
		}
		out := make([]byte, len(line)+1)
		copy(out, line)
		out[len(line)] = '\n'
		fn(out[:len(line)], nil, more)
		return
	}
	over.add(seg)
	fn(nil, over, more)
}

// add appends the next bytes of an over-long line: the head keeps its
// first overflowKeep bytes, the tail its last overflowKeep.
func (o *overflow) add(p []byte) {
	if k := overflowKeep - len(o.head); k > 0 {
		o.head = append(o.head, p[:min(k, len(p))]...)
	}
	if len(p) >= overflowKeep {
		o.tail = append(o.tail[:0], p[len(p)-overflowKeep:]...)
		return
	}
	o.tail = append(o.tail, p...)
	if len(o.tail) > overflowKeep {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-overflowKeep:]...)
	}
}

// trimNL returns a line without its line ending, LF or CRLF. The ending
// is framing, not message: MCP's stdio transport delimits messages by
// newlines and a message contains none, and a \r before the \n is JSON
// whitespace after the message (RFC 8259 §2), not part of it. The host
// writes every line it forwards framed by a single \n, so a peer that
// writes CRLF is read, and its message bytes forwarded unchanged, but its
// \r does not reach the other side.
func trimNL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// start launches the server under a new epoch with identity id (computed by
// the caller just before) and starts reading its stdout. It does not make
// the child current.
func (h *Host) start(id *build.Identity, ep epoch.Epoch) (*child, error) {
	h.mu.Lock()
	everUp := h.everUp
	h.mu.Unlock()
	if !everUp && id.Entry.Missing {
		// Not built yet (firststart.go): launching would only fail, and
		// count as a crash.
		return nil, &notBuiltError{entry: id.Entry.Path}
	}
	b := h.openBroker(ep)
	env, envScopes := h.envDelivery(ep, h.childEnv(b))
	tmp, err := serverTemp(ep, h.logf)
	if err != nil {
		// The shared TMPDIR is one a sandboxed agent writes: a tool
		// that caches compiled code there (tsx) would run what it finds.
		if b != nil {
			b.Close()
		}
		return nil, fmt.Errorf("start %s: no TMPDIR of its own in your state directory, and the shared one is an agent's to write: %w", h.opts.Command[0], err)
	}
	if env == nil {
		env = os.Environ()
	}
	env = append(slices.Clip(env), "TMPDIR="+tmp.dir)
	c, err := startChild(h.opts.Command, h.opts.Dir, h.log, h.guard, ep, id, env)
	if err != nil {
		if b != nil {
			b.Close()
		}
		tmp.remove(h.logf)
		return nil, fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	c.envScopes, c.tmp = envScopes, tmp
	h.serveBroker(c, b)
	go c.run(h.opts.MaxLine, func(line []byte, over *overflow, more bool) { h.fromChildMore(c, line, over, more) }, func() {
		h.childExited(c)
		c.tmp.remove(h.logf)
	})
	if h.opts.AllowSelfReload {
		go h.watchTree(c)
	}
	h.mu.Lock()
	h.unbuilt = missingCode(id)
	h.mu.Unlock()
	h.infof("epoch %s: started pid %d: %v (entry %s %s)", ep, c.pid, h.opts.Command, id.Entry.Path, id.Entry.Digest.Short())
	h.writeRecord(c)
	rec := h.record(c)
	fields := map[string]any{"pid": strconv.Itoa(c.pid), audit.FieldEntry: string(rec.EntryDigest),
		"runtime": rec.Runtime, "runtime_digest": string(rec.RuntimeDigest), "dir": rec.WorkingDirectory,
		"command": rec.LaunchCommand, "label": rec.ServerLabel}
	if rec.LockfileDigest != "" {
		fields["lockfile"] = string(rec.LockfileDigest)
	}
	if f := h.builtRuntimeFields(id); f != nil {
		maps.Copy(fields, f)
		h.infof("epoch %s: runs the runtime %s, not the one the last successful build %s resolved: %s", ep, describeRuntime(id.Runtime), f["built_runtime_build"], f["built_runtime"])
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

// reasonHostStopped is the reason of the requests in flight when the host
// shuts down (the client closed the connection, the host was stopped).
const reasonHostStopped = "host_stopped"

// abortLocked answers every request in flight at child c with one error and
// forgets it: it is never retried (seed: "do not automatically repeat a
// write in the new process"; a timeout is not proof it did not run).
// subscriptions/listen requests are kept for re-sending when next is set.
func (h *Host) abortLocked(c *child, reason string, next epoch.Epoch) {
	for k, cl := range h.inflight {
		if cl.child != c {
			continue
		}
		if cl.method == "initialize" && (next != "" || !h.everUp) {
			continue // kept: the next child answers it, the session has not begun (firststart.go)
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
		switch reason {
		case "server_exited":
			// Many clients show only the message: it says what happened.
			data["exitStatus"] = c.exitStatus()
			when := "while this request was in flight"
			if cl.method == "initialize" {
				when = "while starting, before it answered initialize"
			}
			msg = "server_restarted (server_exited): the server " + exitText(c) + " " + when + "; the request was not retried and may or may not have taken effect: " +
				"check whether it did before calling again (" + selfcmd.Cmd("status") + " shows why the server exited)"
		case reasonHostStopped:
			msg = "server_restarted (host_stopped): the host is shutting down and stopped the server while this request was in flight; the request was not retried and may or may not have taken effect: " +
				"reconnect the server from the client (it starts a new host), then check whether it did before calling again"
		case reasonCredentialRelaunch:
			data["currentEpoch"] = next
			msg = "server_restarted: the server was started again under the same epoch, with a credential a person approved (deliver = \"env\"), while this request was in flight; it was not retried and may or may not have taken effect: " +
				"check whether it did before calling again"
		default:
			data["currentEpoch"] = next
			msg = "server_restarted: execution epoch changed while this request was in flight; it was not retried and may or may not have taken effect: " +
				"list the tools again, check whether it did, then call again (a call that needs a grant needs one for the new epoch: " + selfcmd.Cmd("approve") + ")"
		}
		h.abortToClientLocked(jsonrpc.ErrorLine(cl.id, CodeServerRestarted, msg, data))
		h.abortedLocked(cl, reason)
	}
}

// abortedLocked records that request cl, which its server got, ended
// without its answer reaching the client, and why: the call_aborted
// record that audit verify pairs with the call's tool_called.
func (h *Host) abortedLocked(cl *call, reason string) {
	fields := map[string]any{"reason": reason, audit.FieldMethod: cl.method, audit.FieldRequestID: string(cl.id)}
	if cl.tool != "" {
		fields[audit.FieldTool] = cl.tool
	}
	h.audit.event(audit.TypeCallAborted, cl.child.epoch, h.run, fields)
}

// goDownLocked records that no child runs and answers held requests.
func (h *Host) goDownLocked(reason string) {
	h.downReason = reason
	h.setState(StateDown)
	for _, line := range h.held {
		if m, err := jsonrpc.ParseClient(line); err == nil && m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	}
	h.held = nil
	h.releaseAbortsLocked()
	h.endFirstWaitLocked()
}

// observeOnce reads /proc for child c after its first message (Linux): by
// then a wrapper has exec'd what really runs. The process image, which
// every granted call is checked against (image.go), is read at once.
func (h *Host) observeOnce(c *child) {
	h.mu.Lock()
	first := !c.looked
	c.looked = true
	h.mu.Unlock()
	if !first {
		return
	}
	im, err := childproc.ReadImage(c.pid)
	h.mu.Lock()
	c.image, c.imaged = im, err == nil
	isFirst := c.first
	h.mu.Unlock()
	if isFirst {
		h.startFirstCheck(c) // while the client initializes (identity.go)
	}
	switch {
	case err == nil && im.AuxvUnread():
		h.logf("epoch %s: the auxiliary vector of pid %d cannot be read: an exec of the same program with the same arguments in place is not seen", c.epoch, c.pid)
	case err != nil && err != childproc.ErrNoImage:
		h.logf("epoch %s: the process image of pid %d cannot be read (%v): an exec of new code in place is not seen", c.epoch, c.pid, err)
	}
	go func() {
		o := childproc.Observe(c.pid, true)
		h.mu.Lock()
		c.observed = o
		h.mu.Unlock()
		if o != nil && len(o.Cmdline) > 0 && o.Cmdline[0] != "" {
			h.logf("epoch %s: pid %d runs %s (%s) as %q", c.epoch, c.pid, o.Exe, o.ExeDigest.Short(), o.Cmdline)
		}
	}()
}

// warnMissing says so when the entry or code the launch command names does
// not exist: usually the server was not built yet. The identity records it
// as missing (build.Spec.Unbuilt), so the build that writes it is a change.
func (h *Host) warnMissing(id *build.Identity) {
	for _, p := range missingCode(id) {
		h.logf("warning: %s does not exist (build the server first?): the identity records it as missing, and the build that writes it is new code", p)
	}
}

// exitText says how child c ended, for a message: its exit status once it
// was reaped, else that it is being stopped.
func exitText(c *child) string {
	select {
	case <-c.done:
		return "exited (" + c.exitStatus() + ")"
	default:
		return "failed to start and is being stopped"
	}
}
