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
	"github.com/mcpepoch/mcpepoch/internal/layout"

	"strings"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
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
	// auditSyncEvery is the least time between two syncs of the log: the
	// records written meanwhile share one fsync. What a machine that
	// stops can lose grows by as much.
	auditSyncEvery = time.Millisecond
	// auditStuck is how long one write may take before the writer counts
	// as unhealthy while it still waits (a hung disk or file system).
	auditStuck = 5 * time.Second
	// auditHeadSync bounds how long the head's rewrite waits for its
	// fdatasync (audit.Options.LazyHead, HeadSyncEvery): the group that
	// finds it due syncs it after the log's fsync, an idle writer when it
	// is due, and close at once. What a machine that stops can cost the
	// head grows by as much (docs/audit.md, "What a crash can cost").
	auditHeadSync = time.Second
)

// auditor appends the host's events to the project's audit log,
// .mcpepoch/audit.jsonl, shared by every host of the project (package audit
// serializes writers with a lock). Events are queued in the order the host
// decides them (under h.mu) and written in that order, as soon as they are
// queued when that needs no wait: the goroutine that queued one appends
// everything queued under the log's lock, chain hash and all, in one
// write(2) (audit.Log.TryWrite). What cannot be written at once (the log
// in use by the writer goroutine, its lock held by another process) is
// written by the writer goroutine (audit.Log.Write), and so is a record no
// action waits for (a tool_result) that no guarded write took along
// within auditSyncEvery. The writer goroutine
// also makes what was written durable: one fsync, the copy of the head
// outside the project written and synced, and the head rewritten in
// place per group, however many records were written meanwhile
// (audit.Log.Sync); the head's own fdatasync waits up to auditHeadSync
// (audit.Options.LazyHead), and close makes it at once.
//
// No action without its audit record: a tools/call is forwarded only once
// its tool_called record is in the file (write(2) returned; its fsync
// follows, grouped). A record written at once lets the call go at once;
// otherwise the child's stdin writer waits for it (lineQueue gate); a
// record that could not be written refuses the call with
// CodeAuditUnavailable, and is not counted as lost (audit.Event.Guards).
//
// The log fails closed. When a write or a sync fails (ENOSPC, EIO,
// EROFS, a lock held too long) the writer is unhealthy: healthy returns
// the error and the host refuses every new tools/call with
// CodeAuditUnavailable instead of forwarding it. The writer goroutine
// tries again every auditRetry with what is queued; the first write and
// sync that succeed begin with the records_lost record the audit package
// writes for what was lost, and calls flow again. A host killed with
// SIGKILL can lose what was queued and not yet written; a machine that
// stops can lose what was written and not yet synced. What reached the
// disk stays verifiable.
type auditor struct {
	log  *audit.Log
	key  audit.Key // the project's digest key
	logf func(string, ...any)

	// wmu is held from taking queued events to their write(2), so that
	// the log gets them in the order they were queued.
	wmu sync.Mutex

	// kick wakes the writer goroutine when it waits for work, hurry when
	// it waits to group a sync: a record an action waits for is queued
	// (one token each at most).
	kick, hurry chan struct{}

	// mu guards the rest; cond is signalled on close and every write or
	// sync. Lock order: wmu, mu.
	mu       sync.Mutex
	cond     *sync.Cond
	pending  []audit.Event // queued, not yet written
	queued   int64         // events ever queued: an event's ticket is the count after it
	done     int64         // events handed to the log, written or not
	synced   int64         // events handed to the log before its last sync
	unsynced bool          // written since the last sync
	bad      []ticketSpan  // recent tickets whose record was not written
	forgot   int64         // tickets up to here are older than bad remembers
	closed   bool
	urgent   bool       // a record an action waits for is queued, not written
	since    time.Time  // when the oldest event in pending was queued
	guarded  int64      // the ticket of the last such record queued
	err      *auditDown // nil while healthy
	last     *auditDown // the last failure, for a call refused after it
	failed   time.Time  // when the last write or sync failed, while unhealthy
	gaps     int        // log.Gaps() when the writer became unhealthy
	writing  time.Time  // when the write or sync under way started; zero if none
	groups   int        // syncs, for the benchmark
	lastSync time.Time  // when the last sync ended
	stopped  chan struct{}
}

// ticketSpan is a run of tickets, from and to included.
type ticketSpan struct{ from, to int64 }

// keptSpans is how many failed writes auditor.bad remembers.
const keptSpans = 64

// keptPending is the most queued events whose array the auditor keeps
// for reuse once they are written.
const keptPending = 256

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
	opts := &audit.Options{LockTimeout: auditLockTimeout, LazyHead: true, HeadSyncEvery: auditHeadSync}
	// A copy of the head outside the project, where an agent confined to
	// the project cannot rewrite it (layout.ProjectState).
	if opts.CopyDir, err = layout.ProjectState(dir); err != nil {
		logf("warning: %v: the audit log's head is kept only in the project, where a rewrite of the log with a new hash chain cannot be told", err)
	}
	l, err := audit.Open(p, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range l.Recoveries() {
		logf("audit log %s: recovered after a crash: %v", p, r)
	}
	a := &auditor{log: l, key: key, logf: logf, stopped: make(chan struct{}),
		kick: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
	a.cond = sync.NewCond(&a.mu)
	go a.loop()
	return a, nil
}

// event queues one record for the writer goroutine. Fields must hold no
// secret: names and digests only (audit package doc).
func (a *auditor) event(typ string, ep epoch.Epoch, run epoch.RunID, fields map[string]any) {
	a.queue(audit.Event{Type: typ, Epoch: string(ep), Run: string(run), Fields: fields, Time: time.Now()}, false)
}

// checkpoint is event for a record that anchors the log before it (a
// presence-signed approval): its seq and hash are kept beside the copy of
// the head too (audit.Event.Checkpoint).
func (a *auditor) checkpoint(typ string, ep epoch.Epoch, run epoch.RunID, fields map[string]any) {
	a.queue(audit.Event{Type: typ, Epoch: string(ep), Run: string(run), Fields: fields, Time: time.Now(), Checkpoint: true}, false)
}

// guard is event for a record that an action waits for (a tools/call's
// tool_called): with now, it writes it, with everything queued before
// it, at once when that needs no wait; without, it leaves it to a later
// guard or writeNow of the same goroutine. It returns the record's
// ticket for recorded and whenRecorded.
func (a *auditor) guard(typ string, ep epoch.Epoch, run epoch.RunID, fields map[string]any, now bool) int64 {
	ev := audit.Event{Type: typ, Epoch: string(ep), Run: string(run), Fields: fields, Time: time.Now(), Guards: true}
	return a.queue(ev, now)
}

// writeNow writes what is queued when that needs no wait, else hurries
// the writer goroutine when a record an action waits for is among it.
func (a *auditor) writeNow() {
	if a == nil {
		return
	}
	a.mu.Lock()
	waiting := a.done < a.queued && a.guarded > a.done
	down := a.err != nil
	a.mu.Unlock()
	if !waiting {
		return
	}
	if !down {
		a.tryWrite()
	}
	a.mu.Lock()
	waiting = a.done < a.queued && a.guarded > a.done
	a.urgent = a.urgent || waiting
	a.mu.Unlock()
	if waiting {
		nudge(a.hurry)
	}
}

// queue queues ev and returns its ticket (-1 once closed; 0 without a
// log); now says to write what is queued at once if that needs no wait.
func (a *auditor) queue(ev audit.Event, now bool) int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return -1
	}
	if len(a.pending) == 0 {
		a.since = time.Now()
	}
	a.pending = append(a.pending, ev)
	a.queued++
	t, down := a.queued, a.err != nil
	if ev.Guards {
		a.guarded = t
	}
	a.mu.Unlock()
	if now && !down {
		a.tryWrite()
	}
	if now {
		a.mu.Lock()
		written, _ := a.recordedLocked(t)
		a.urgent = a.urgent || !written
		a.mu.Unlock()
		if !written {
			nudge(a.hurry)
		}
	}
	a.wake()
	return t
}

// wake makes the writer goroutine look for work.
func (a *auditor) wake() { nudge(a.kick) }

// nudge puts a token in c unless one is there.
func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// tryWrite writes what is queued when that needs no wait.
func (a *auditor) tryWrite() {
	if !a.wmu.TryLock() {
		return // the writer goroutine is writing; it takes what is queued
	}
	defer a.wmu.Unlock()
	a.mu.Lock()
	batch, first := a.pending[:min(len(a.pending), audit.MaxBatch)], a.done
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	n, err := a.log.TryWrite(batch)
	if err == audit.ErrBusy {
		return
	}
	a.mu.Lock()
	a.wroteLocked(first, len(batch), n, err)
	a.mu.Unlock()
}

// write is tryWrite that waits (the writer goroutine's): for the log's
// lock, up to auditLockTimeout, and for the disk. With nothing queued it
// still writes what was lost, if anything: it is how an unhealthy writer
// tries again.
func (a *auditor) write() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.mu.Lock()
	batch, first := a.pending[:min(len(a.pending), audit.MaxBatch)], a.done
	a.writing, a.urgent = time.Now(), false
	a.mu.Unlock()
	n, err := a.log.Write(batch)
	a.mu.Lock()
	a.writing = time.Time{}
	a.wroteLocked(first, len(batch), n, err)
	a.mu.Unlock()
}

// wroteLocked records that of the k events queued after ticket first, the
// first n are in the file; err is why the rest are not.
func (a *auditor) wroteLocked(first int64, k, n int, err error) {
	if k == len(a.pending) {
		// All written: the array is kept for the next events (appends
		// of a busy host would otherwise regrow it for every batch),
		// emptied so that it holds on to no fields.
		clear(a.pending)
		a.pending = a.pending[:0]
		if cap(a.pending) > keptPending {
			a.pending = nil
		}
	} else {
		a.pending = a.pending[k:]
	}
	a.done = first + int64(k)
	if n < k {
		a.bad = append(a.bad, ticketSpan{first + int64(n) + 1, first + int64(k)})
		if len(a.bad) > keptSpans {
			a.forgot = a.bad[0].to
			a.bad = a.bad[1:]
		}
	}
	if err == nil {
		a.unsynced = true
	} else {
		a.failLocked(err)
	}
	a.cond.Broadcast()
}

// recorded reports whether the record of ticket t is in the file, and
// whether it is still to be written (then neither).
func (a *auditor) recorded(t int64) (written, pending bool) {
	if a == nil || t == 0 {
		return true, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recordedLocked(t)
}

func (a *auditor) recordedLocked(t int64) (written, pending bool) {
	switch {
	case t < 0 || t <= a.forgot:
		return false, false
	case t > a.done:
		return false, !a.closed || len(a.pending) > 0
	}
	for _, s := range a.bad {
		if s.from <= t && t <= s.to {
			return false, false
		}
	}
	return true, false
}

// whenRecorded waits until the record of ticket t is written or could
// not be, and reports whether it is in the file.
func (a *auditor) whenRecorded(t int64) bool {
	if a == nil || t == 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		written, pending := a.recordedLocked(t)
		if !pending {
			return written
		}
		a.cond.Wait()
	}
}

// argsDigest returns the keyed digest of a tool call's arguments, the
// args_digest of its tool_called record.
func (a *auditor) argsDigest(raw json.RawMessage) string {
	if a == nil {
		return ""
	}
	return a.key.ArgsDigest(raw)
}

// loop is the writer goroutine: it writes what was not written at once
// and syncs what was written, one fsync per group, at most one per
// auditSyncEvery; a record an action waits for is written at once.
func (a *auditor) loop() {
	defer close(a.stopped)
	for {
		a.mu.Lock()
		down, closed, sync, urgent := a.err != nil, a.closed, a.unsynced, a.urgent
		// While unhealthy, a retry writes what is queued (or only what was
		// lost) every auditRetry; once it wrote, the sync decides.
		due := down && !sync && !time.Now().Before(a.failed.Add(auditRetry))
		write := len(a.pending) > 0 && (!down || closed) || due
		wait := time.Until(a.lastSync.Add(auditSyncEvery))
		// A record no action waits for (a tool_result) waits up to
		// auditSyncEvery for the next guarded write, which the forwarding
		// goroutine does and which takes it along: a sequential client's
		// calls then cost one write(2) each, not two.
		aged := len(a.pending) > 0 && time.Since(a.since) >= auditSyncEvery
		if write && !sync && !down {
			wait = min(wait, time.Until(a.since.Add(auditSyncEvery)))
		}
		if down && !due {
			wait = time.Until(a.failed.Add(auditRetry))
		}
		a.mu.Unlock()
		switch {
		case write && (urgent || aged || closed || wait <= 0 || due):
			a.write()
		case sync && (wait <= 0 || closed):
			a.sync()
		case closed:
			return
		case sync || down || write:
			a.sleep(wait)
		default:
			a.idle()
		}
	}
}

// idle waits for work; a head rewrite not yet synced is made durable
// when it is due (auditHeadSync after it).
func (a *auditor) idle() {
	due := a.log.HeadDue()
	if due.IsZero() {
		<-a.kick
		return
	}
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-a.kick:
	case <-t.C:
		if err := a.log.Sync(); err != nil {
			a.mu.Lock()
			a.failLocked(err)
			a.cond.Broadcast()
			a.mu.Unlock()
		}
	}
}

// sleep waits for d, for a record an action waits for, or for close
// (events queued meanwhile wait for the group).
func (a *auditor) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.hurry:
	case <-t.C:
	}
}

// sync makes what was written durable (audit.Log.Sync).
func (a *auditor) sync() {
	a.mu.Lock()
	d := a.done
	a.unsynced = false
	a.writing = time.Now()
	a.mu.Unlock()
	err := a.log.Sync()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writing = time.Time{}
	a.groups++
	a.lastSync = time.Now()
	a.synced = max(a.synced, d)
	if err != nil {
		a.failLocked(err)
	} else if a.err != nil && a.done == d {
		a.recoverLocked()
	}
	a.cond.Broadcast()
}

// failLocked makes the writer unhealthy after err.
func (a *auditor) failLocked(err error) {
	a.failed = time.Now()
	if a.err != nil {
		return
	}
	d := &auditDown{file: a.log.Path(), cause: err, since: time.Now()}
	a.wake() // the writer goroutine retries, even with nothing queued
	var we *audit.WriteError
	if errors.As(err, &we) {
		d.file, d.cause = we.Path, we.Err
	}
	a.err, a.last = d, d
	a.gaps = a.log.Gaps()
	a.logf("audit log: %v: tools/call and the other requests it records are refused (error %d audit_unavailable) until a write succeeds; retrying every %v",
		d, CodeAuditUnavailable, auditRetry)
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
	a.wake()
	nudge(a.hurry)
	<-a.stopped
	a.log.Close()
}

// listField is a list for an audit record's field: [] when empty, never
// null, so that a record with no credential scope reads the same whichever
// way its grant was made.
func listField(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// The answers a tools/call (or another request the host records) gets
// instead of being forwarded while the audit log cannot be written
// (CodeAuditUnavailable), and the writer's health that decides them; see
// auditor in auditlog.go.

// refusal returns the error line for a tools/call m while the audit log
// cannot be written, or nil when it can.
func (a *auditor) refusal(m *jsonrpc.Message) []byte {
	err := a.healthy()
	if err == nil {
		return nil
	}
	return a.refusalFor(m, err.(*auditDown))
}

// unrecorded returns the error line for a tools/call m whose tool_called
// record could not be written.
func (a *auditor) unrecorded(m *jsonrpc.Message) []byte {
	d, _ := a.healthy().(*auditDown)
	if d == nil {
		a.mu.Lock()
		d = a.last
		a.mu.Unlock()
	}
	if d == nil {
		d = &auditDown{file: a.log.Path(), cause: errors.New("the call's record could not be written"), since: time.Now()}
	}
	return a.refusalFor(m, d)
}

func (a *auditor) refusalFor(m *jsonrpc.Message, d *auditDown) []byte {
	return jsonrpc.ErrorLine(m.ID, CodeAuditUnavailable,
		"audit_unavailable: "+d.Error()+"; the call was not forwarded: a person fixes what stops the write (a full disk, the file's permissions, a process holding its lock; "+
			selfcmd.Cmd("status")+" shows the cause), and calls resume as soon as a write succeeds (the host tries every "+auditRetry.String()+")",
		map[string]any{"reason": "audit_unavailable", "method": m.Method, "requestId": m.ID,
			"file": d.file, "error": d.cause.Error(), "since": d.since.UTC().Format(time.RFC3339Nano)})
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

// recoverLocked makes the writer healthy again after a write and a sync
// that succeeded.
func (a *auditor) recoverLocked() {
	var notes []string
	if errors.Is(a.err.cause, audit.ErrCut) {
		notes = append(notes, "the records cut from it are gone, named by its "+audit.TypeLogRecovered+" record")
	}
	if a.log.Gaps() > a.gaps {
		notes = append(notes, "what could not be written is recorded as "+audit.TypeRecordsLost)
	}
	note := "no record was lost"
	if len(notes) > 0 {
		note = strings.Join(notes, "; ")
	}
	a.logf("audit log %s: writing again after %v; %s", a.log.Path(), time.Since(a.err.since).Round(time.Millisecond), note)
	a.err = nil
}

// toolCalled queues the tool_called record of a tools/call, the record
// its forwarding waits for (guard, with now), and returns its ticket:
// the tool, the keyed digest of its arguments and the grant it runs
// under (none: ""). Its fields are a list, not a map: one per call.
func (a *auditor) toolCalled(ep epoch.Epoch, run epoch.RunID, tool, argsDigest, grantID string, now bool) int64 {
	attrs := make([]audit.Attr, 2, 3)
	attrs[0] = audit.Attr{Key: audit.FieldTool, Value: tool}
	attrs[1] = audit.Attr{Key: audit.FieldArgsDigest, Value: argsDigest}
	if grantID != "" {
		attrs = append(attrs, audit.Attr{Key: "grant", Value: grantID})
	}
	ev := audit.Event{Type: audit.TypeToolCalled, Epoch: string(ep), Run: string(run), Attrs: attrs, Time: time.Now(), Guards: true}
	return a.queue(ev, now)
}

// toolResult queues the tool_result record of a tools/call's answer: the
// tool, whether the result is an error (isError) and how long the call
// took, in whole milliseconds, as a decimal string.
func (a *auditor) toolResult(ep epoch.Epoch, run epoch.RunID, tool string, isError bool, durationMS string) {
	attrs := []audit.Attr{{Key: audit.FieldTool, Value: tool}, {Key: "is_error", Value: isError}, {Key: "duration_ms", Value: durationMS}}
	a.queue(audit.Event{Type: audit.TypeToolResult, Epoch: string(ep), Run: string(run), Attrs: attrs, Time: time.Now()}, false)
}
