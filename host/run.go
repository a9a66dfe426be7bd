package host

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/pipes"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/internal/treewatch"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Run is the host's life: start the server, listen for build signals, pass
// messages until the client closes stdin or ctx ends, then stop the server's
// whole process group. It returns an error when the host cannot start (bad
// command, socket trouble) or when it closed the connection on purpose
// (ModeClose, a protocol version mismatch).
//
// Run starts the host's goroutines in the order doc.go lists (Goroutines and locks) and stops
// them in the reverse order: the client reader is left to end with
// stdin; the socket server's requests finish; the child is stopped; the
// run's grants are revoked; the client writer and, last, the audit writer
// are closed.
func (h *Host) Run(ctx context.Context) error {
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	defer h.cancel(nil)
	// What a stop under way left of a server's group ends with the host,
	// as the guard would end it had the host died.
	defer h.guard.Stop()
	// Last: what the log holds is written for up to logDrain; a stderr
	// nobody reads never keeps the host from exiting.
	defer h.log.close(logDrain)
	// A client that goes away makes writes to stdout fail with EPIPE instead
	// of killing the host before it can stop the server and close its logs.
	// Notify, not Ignore: an ignored signal is inherited across exec, and
	// the server must get SIGPIPE as it would without the host.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if err := layout.CheckDir(h.opts.Dir); err != nil {
		return err
	}
	h.openTrust()
	defer h.closePresence()
	h.applyFloor() // before the self-reload check: allow_self_reload may be held at the floor
	if n := h.noAuthenticatorLocked(); n != "" {
		h.logf("%s", n)
	}
	if !h.opts.AllowSelfReload {
		if err := checkSelfReload(h.opts.Command); err != nil {
			return err
		}
	}
	defer h.closeWriters()
	if err := h.openWriters(); err != nil {
		return err
	}
	h.auditPinnedLocked(h.pres.openErr) // no goroutine yet
	h.auditWeakLocked("start")
	h.trees = treewatch.New(h.logf)
	defer h.trees.Close() // after the socket server and the child are done
	if err := h.startFirst(); err != nil {
		return err
	}
	ln, err := notify.Listen(h.opts.Dir, string(h.run))
	if err != nil {
		h.stopChild()
		return err
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		// A person's revoke and status get through every slot taken
		// with valid requests; a revoke, also when the overflow lane is
		// held too (revokefile.go).
		ln.Reserve(localapi.TypeRevoke, localapi.TypeStatus)
		ln.Serve(h.ctx, h.localAPI().Serve) // returns once its handlers have
	}()
	h.infof("agent run %s: listening on %s", h.run, ln.Path())
	if why := h.clients.ClientUnknown(); why != "" {
		h.infof("%s", why)
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		h.watchManifest(h.ctx) // a second build signal (signal.go)
	}()
	drifted := make(chan struct{})
	go func() {
		defer close(drifted)
		h.watchDrift(h.ctx) // code changed under a running epoch (identity.go)
	}()
	revokes := make(chan struct{})
	go func() {
		defer close(revokes)
		h.watchRevokes(h.ctx) // a revoke no socket slot can hold back (revokefile.go)
	}()

	go func() {
		in := pipes.PollableReader(h.opts.Stdin)
		defer in.Close()
		readLinesMore(in, h.opts.MaxLine, h.fromClient)
		h.cancel(nil)
	}()
	<-h.ctx.Done()
	<-watched
	<-drifted
	<-revokes
	return h.shutdown(served)
}

// openWriters starts the client writer and the audit writer and opens the
// run's grants; the audit log records the client's connection.
func (h *Host) openWriters() error {
	out := h.opts.Stdout
	if f, ok := out.(*os.File); ok {
		pipes.Grow(f)
		if h.ownOut = pipes.PollableWriter(f); h.ownOut != nil {
			out = h.ownOut
		}
	}
	h.out = startLineQueue(out, func(err error) {
		h.logf("client stdout: %v: closing", err)
		h.cancel(nil)
	}, h.ownOut != nil) // the host alone holds its own descriptor
	var err error
	if h.grants, err = grant.Open(layout.GrantStore(h.opts.Dir, h.run)); err != nil {
		return err
	}
	if h.audit, err = openAuditor(h.opts.Dir, h.logf); err != nil {
		return &AuditError{Path: layout.Audit(h.opts.Dir), Err: err}
	}
	h.audit.event(audit.TypeClientConnected, "", h.run, map[string]any{"label": h.opts.Label, "pid": strconv.Itoa(os.Getpid())})
	return nil
}

// closeWriters flushes what the client has not been sent yet (for up to a
// second), then closes the audit log: nothing records after it.
func (h *Host) closeWriters() {
	if h.out != nil {
		h.out.close(time.Second)
	}
	if h.ownOut != nil {
		h.ownOut.Close()
	}
	h.audit.close()
}

// startFirst starts the session's first epoch.
func (h *Host) startFirst() error {
	id, gen, err := h.identityAt()
	if err != nil {
		return err
	}
	if err := h.checkLaunch(id); err != nil {
		return err
	}
	h.warnMissing(id)
	if id.Source != "" {
		h.logf("note: %s", id.Source)
	}
	c, err := h.start(id, epoch.New(time.Now()))
	if notBuiltStart(h.opts.Command, err) {
		// Not built yet (firststart.go): wait for a build.
		h.mu.Lock()
		h.unbuilt = []string{h.opts.Command[0]}
		if m := missingCode(id); len(m) > 0 {
			h.unbuilt = m
		}
		h.giveUpLocked("not built yet: " + err.Error())
		h.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	// The first epoch of a session starts ready with its catalog unknown:
	// nothing has changed yet that a call could have been prepared against.
	// The catalog is fetched once the client has initialized.
	h.setState(StateReady)
	c.verified = gen
	c.first, c.firstDone = true, make(chan string, 1)
	looked := c.looked
	h.adoptLocked(c)
	h.mu.Unlock()
	if looked {
		h.startFirstCheck(c) // its first message came already (identity.go)
	}
	return nil
}

// shutdown runs once h.ctx is done: it lets a one-shot client have its
// answers, waits for the socket server's requests to finish, stops the
// child and ends the run. It returns why the host ended (nil when the
// client closed the connection).
func (h *Host) shutdown(served <-chan struct{}) error {
	cause := context.Cause(h.ctx)
	if cause == context.Canceled {
		cause = nil
		h.infof("client closed the connection: stopping the server")
		h.drain(2 * time.Second)
	}
	<-served
	h.stopChild()
	os.Remove(h.recordPath())
	h.endRun()
	return cause
}

// endRun revokes the run's live grants (reason run_ended) and records the
// end of the client's connection.
func (h *Host) endRun() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range h.grants.Live(time.Now()) {
		h.audit.event(audit.TypeGrantRevoked, g.ExecutionEpoch, h.run, map[string]any{"grant": g.ID, "reason": grant.RevokedRunEnded})
	}
	if n := h.grants.RevokeAll(grant.RevokedRunEnded, time.Now()); n > 0 {
		h.saveGrantsLocked()
	}
	h.audit.event(audit.TypeClientClosed, "", h.run, nil)
}

// AuditError reports an audit log the host cannot append to; the host does
// not start without one.
type AuditError struct {
	Path string
	Err  error
}

// Error gives the advice once: an audit error that already says to run
// audit verify (a CorruptError, a truncated or replaced log) is not told it
// again.
func (e *AuditError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, " audit verify") {
		return fmt.Sprintf("audit log %s: %s; move it aside to start a new one", e.Path, msg)
	}
	return fmt.Sprintf("audit log %s: %s (check it with '"+selfcmd.Name()+" audit verify'; move it aside to start a new one)", e.Path, msg)
}

func (e *AuditError) Unwrap() error { return e.Err }

// stopChild stops the current child, if any, for good: it waits for a
// restart, crash recovery or catalog fetch under way (each ends soon once
// h.ctx is done), and no restart starts a child after it (restart checks
// h.ctx under restartMu).
func (h *Host) stopChild() {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()
	h.mu.Lock()
	c := h.child
	h.child = nil
	h.recovering, h.idle = false, false // what the client sends now is answered, not held
	h.goDownLocked("the host is shutting down")
	if c != nil {
		h.abortLocked(c, reasonHostStopped, "") // past the drain: they end with the server
	}
	h.mu.Unlock()
	if c != nil {
		c.stop(h.opts.Grace)
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
