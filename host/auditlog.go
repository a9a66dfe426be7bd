package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// CodeAuditUnavailable is the error of a tools/call refused because the
// audit log cannot be written (seed: no action without its audit record).
// error.data holds "reason" ("audit_unavailable"), "file" (the file that
// could not be written or locked), "error" (the OS error), "since" (RFC 3339)
// and the request's "method" and "requestId".
const CodeAuditUnavailable = -31020

// Timing of the audit writer.
const (
	// auditRetry is how often an unhealthy writer tries again.
	auditRetry = 500 * time.Millisecond
	// auditLockTimeout bounds the wait for another host's lock on the log.
	auditLockTimeout = 2 * time.Second
	// auditStuck is how long one write may take before the writer counts
	// as unhealthy while it still waits (a hung disk or file system).
	auditStuck = 5 * time.Second
)

// auditor appends the host's events to the project's audit log,
// .mcpepoch/audit.jsonl, shared by every host of the project (package audit
// serializes writers with a lock). Events are queued in the order the host
// decides them (under h.mu) and written by one goroutine in groups: each
// group is one write, one fsync and one head rewrite (audit.Log.AppendBatch),
// so a tool call never waits for an fsync and a burst costs a few fsyncs,
// not three per record.
//
// The log fails closed. When a group cannot be written (ENOSPC, EIO, EROFS,
// a lock held too long) the writer is unhealthy: healthy returns the error
// and the host refuses every new tools/call with CodeAuditUnavailable
// instead of forwarding it. The writer tries again every auditRetry with
// what is queued; the first group that succeeds begins with the
// records_lost record the audit package writes for what was lost, and
// calls flow again. Calls forwarded while the failing group was being
// written are among what it counts as lost: group commit trades that
// window, one group long, for calls that do not wait on the disk. A host
// killed with SIGKILL can lose the queued tail; what reached the file stays
// verifiable.
type auditor struct {
	log  *audit.Log
	key  audit.Key // the project's digest key
	logf func(string, ...any)
	q    *batchQueue[audit.Event] // from event to the writer goroutine

	// mu guards the rest; cond is signalled on close and every written
	// group. Lock order: mu before q's own lock (event pushes under mu so
	// that queued counts exactly what the queue took).
	mu      sync.Mutex
	cond    *sync.Cond
	queued  int64 // events ever queued
	done    int64 // events ever handed to the log (written or counted lost)
	closed  bool
	err     *auditDown // nil while healthy
	failed  time.Time  // when the last group failed, while unhealthy
	gaps    int        // log.Gaps() when the writer became unhealthy
	writing time.Time  // when the group being written started; zero if none
	groups  int        // groups written, for the benchmark
	stopped chan struct{}
}

// auditDown is why the writer is unhealthy.
type auditDown struct {
	file  string // the file that could not be written or locked
	cause error  // the OS error, or the audit package's
	since time.Time
}

func (d *auditDown) Error() string {
	return fmt.Sprintf("the audit log cannot be written (%s: %v)", d.file, d.cause)
}

func openAuditor(dir string, logf func(string, ...any)) (*auditor, error) {
	p := layout.Audit(dir)
	if err := layout.MkdirAll(filepath.Dir(p)); err != nil {
		return nil, err
	}
	key, err := audit.LoadKey(layout.DigestKey(dir))
	if err != nil {
		return nil, err
	}
	l, err := audit.Open(p, &audit.Options{LockTimeout: auditLockTimeout})
	if err != nil {
		return nil, err
	}
	for _, r := range l.Recoveries() {
		logf("audit log %s: recovered after a crash: %v", p, r)
	}
	a := &auditor{log: l, key: key, logf: logf, q: newBatchQueue[audit.Event](), stopped: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	go a.loop()
	return a, nil
}

// event queues one record. Fields must hold no secret: names and digests
// only (audit package doc).
func (a *auditor) event(typ string, ep epoch.Epoch, run epoch.RunID, fields map[string]any) {
	if a == nil {
		return
	}
	ev := audit.Event{Type: typ, Epoch: string(ep), Run: string(run), Fields: fields, Time: time.Now()}
	a.mu.Lock()
	if a.q.push(ev) {
		a.queued++
	}
	a.mu.Unlock()
}

// argsDigest returns the keyed digest of a tool call's arguments, the
// args_digest of its tool_called record.
func (a *auditor) argsDigest(raw json.RawMessage) string {
	if a == nil {
		return ""
	}
	return a.key.ArgsDigest(raw)
}

// healthy returns nil while the audit log can be written, else why not.
// A group that has been writing for longer than auditStuck counts as a
// failure while it waits.
func (a *auditor) healthy() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	if !a.writing.IsZero() && time.Since(a.writing) > auditStuck {
		return &auditDown{file: a.log.Path(), since: a.writing,
			cause: fmt.Errorf("a write has not completed for %v", time.Since(a.writing).Round(time.Second))}
	}
	return nil
}

// refusal returns the error line for a tools/call m while the audit log
// cannot be written, or nil when it can.
func (a *auditor) refusal(m *jsonrpc.Message) []byte {
	err := a.healthy()
	if err == nil {
		return nil
	}
	d := err.(*auditDown)
	return jsonrpc.ErrorLine(m.ID, CodeAuditUnavailable,
		"audit_unavailable: "+d.Error()+"; the call was not forwarded (it is retried every "+auditRetry.String()+"; calls resume when a write succeeds)",
		map[string]any{"reason": "audit_unavailable", "method": m.Method, "requestId": m.ID,
			"file": d.file, "error": d.cause.Error(), "since": d.since.UTC().Format(time.RFC3339Nano)})
}

func (a *auditor) loop() {
	defer close(a.stopped)
	for {
		q, closed, down := a.next()
		if closed && len(q) == 0 && !down {
			return
		}
		a.mu.Lock()
		a.writing = time.Now()
		a.mu.Unlock()
		_, err := a.log.AppendBatch(q) // with nothing queued, writes what was lost, if anything
		a.written(len(q), err)
		if err != nil && (closed || errors.Is(err, audit.ErrClosed)) {
			return
		}
	}
}

// next waits for the writer's next group and returns it, whether the queue
// is closed, and whether the writer is unhealthy. While healthy the group
// is everything queued, as soon as anything is. While unhealthy it is what
// was queued until auditRetry after the failed group (possibly nothing: the
// retry then writes only the records_lost record), or until close.
func (a *auditor) next() (q []audit.Event, closed, down bool) {
	a.mu.Lock()
	down, retry := a.err != nil, a.failed.Add(auditRetry)
	a.mu.Unlock()
	if !down {
		q, closed = a.q.take()
		return q, closed, false
	}
	for {
		more, c := a.q.takeTimeout(time.Until(retry))
		q = append(q, more...)
		if c || !time.Now().Before(retry) {
			return q, c, true
		}
	}
}

// written records the outcome of a group of n events.
func (a *auditor) written(n int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done += int64(n)
	a.groups++
	a.writing = time.Time{}
	a.cond.Broadcast()
	if err != nil {
		a.failed = time.Now()
	}
	switch {
	case err != nil && a.err == nil:
		d := &auditDown{file: a.log.Path(), cause: err, since: time.Now()}
		var we *audit.WriteError
		if errors.As(err, &we) {
			d.file, d.cause = we.Path, we.Err
		}
		a.err = d
		a.gaps = a.log.Gaps()
		a.logf("audit log: %v: tools/call is refused (error %d audit_unavailable) until a write succeeds; retrying every %v",
			d, CodeAuditUnavailable, auditRetry)
	case err == nil && a.err != nil:
		note := "no record was lost"
		if a.log.Gaps() > a.gaps {
			note = "what could not be written is recorded as " + audit.TypeRecordsLost
		}
		a.logf("audit log %s: writing again after %v; %s", a.log.Path(), time.Since(a.err.since).Round(time.Millisecond), note)
		a.err = nil
	}
}

// flush waits until every event queued before it was handed to the log,
// written or counted lost.
func (a *auditor) flush() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	target := a.queued
	for a.done < target && !a.closed {
		a.cond.Wait()
	}
}

// close writes what is queued and closes the log.
func (a *auditor) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	a.cond.Broadcast()
	a.mu.Unlock()
	a.q.close()
	<-a.stopped
	a.log.Close()
}
