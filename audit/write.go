package audit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrBusy is returned by TryWrite when writing would mean waiting: for
// another goroutine using the Log, or for another process's lock.
var ErrBusy = errors.New("audit: log busy")

// MaxHold bounds how long a Log keeps the exclusive lock between Write
// and Sync while writes keep coming: the Sync that finds it held longer
// makes everything durable and releases it, so that other writers and
// readers get their turn.
const MaxHold = 50 * time.Millisecond

// Write appends one record per event, in order, numbered on from the last
// record of the log, as Append does, but leaves the disk for later:
// one write(2) of all the lines, and no fsync and no head rewrite until
// Sync. It returns how many of evs, from the first, have their record in
// the file (write(2) returned): a crash of the process keeps them, a
// crash of the machine before Sync may not. From the first Write until
// Sync has made every record durable and named it in the head, the Log
// holds the exclusive lock (see MaxHold), so no reader or other writer
// sees records the head does not name.
//
// Errors, and what is counted as lost, are Append's; an event that
// guards an action (Event.Guards) is not counted. A batch is at most
// MaxBatch events.
func (l *Log) Write(evs []Event) (int, error) { return l.write(evs, true) }

// TryWrite is Write that never waits: when this Log is in use by another
// goroutine, or its lock is held by another process, it writes nothing
// and returns ErrBusy, counting nothing as lost.
func (l *Log) TryWrite(evs []Event) (int, error) { return l.write(evs, false) }

func (l *Log) write(evs []Event, wait bool) (int, error) {
	if len(evs) > MaxBatch {
		return 0, fmt.Errorf("audit: %d events in one write, more than %d", len(evs), MaxBatch)
	}
	for _, ev := range evs {
		if ev.Type == TypeLogRecovered || ev.Type == TypeRecordsLost {
			return 0, fmt.Errorf("audit: event type %s is written only by the log itself", ev.Type)
		}
		if err := ev.check(); err != nil {
			return 0, fmt.Errorf("audit: %v", err)
		}
	}
	if !wait && !l.mu.TryLock() {
		return 0, ErrBusy
	} else if wait {
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	fresh := !l.held
	if fresh {
		timeout := l.lockTimeout
		if !wait {
			timeout = 0
		}
		if err := lockFile(l.lock, true, timeout); err != nil {
			if !wait && errors.Is(err, syscall.EWOULDBLOCK) {
				return 0, ErrBusy
			}
			err = &WriteError{Path: l.lock.Name(), Op: "lock", Err: unwrapPath(err)}
			l.loseAll(evs, err)
			return 0, err
		}
		l.held, l.heldSince = true, time.Now()
	}
	// As every step does: the file may have been cut, replaced or
	// appended to by hand since (one fstat when it was not).
	if err := l.catchUp(); err != nil {
		l.loseAll(evs, err)
		if fresh {
			l.release(true)
		}
		return 0, err
	}
	all := evs
	if fresh || !l.lost.empty() {
		var err error
		if all, err = l.withLost(evs); err != nil {
			l.loseAll(evs, err)
			return 0, &WriteError{Path: l.lostPath, Op: "read", Err: unwrapPath(err), Lost: len(evs),
				Detail: "the count of lost records cannot be read; move it aside"}
		}
	}
	recs, head, err := l.put(nil, all)
	n := 0
	if err == nil {
		l.head = head
		l.wrote++
		l.accounted(recs)
		l.ckPending = append(l.ckPending, checkpointsOf(recs, all)...)
		off := len(all) - len(evs) // a records_lost record first
		for _, r := range recs {
			if r.ev < off {
				continue
			}
			if r.ev-off != n {
				break
			}
			n++
		}
		return n, nil
	}
	// l.known is false: the next write, or the next step once Sync
	// released the lock, catches up with what reached the file.
	return 0, err
}

// Sync makes what Write put in the file durable: one fsync of the log,
// then the head rewritten to name the last record it covers (one pwrite
// and an fdatasync). Writes of this Log go on meanwhile, and are left
// for the next Sync. It releases the lock once every record is durable
// and in the head, or, while writes keep coming, once it was held for
// MaxHold (then it makes them all durable while writes wait). With
// nothing written since the last Sync it only makes a lazy head durable
// once it is due (Options.HeadSyncEvery, HeadDue). On failure
// the error is a *WriteError and the lock is released; the records stay
// in the file, durable or not, and the next step catches up with them.
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if !l.held || l.closed {
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil
		}
		// Nothing new: a lazy head rewritten HeadSyncEvery ago or more
		// is made durable now.
		if err := l.hf.syncDue(); err != nil {
			return &WriteError{Path: l.headPath, Op: "head", Err: unwrapPath(err)}
		}
		return nil
	}
	force := time.Since(l.heldSince) >= MaxHold
	head, wrote, f, ck := l.head, l.wrote, l.f, l.ckPending
	l.ckPending = nil
	if !force {
		l.mu.Unlock()
	}
	err := l.durable(f, head, ck)
	if !force {
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if err != nil && len(ck) > 0 {
		l.ckPending = append(ck, l.ckPending...) // copied by the next Sync or step
	}
	if err != nil && l.f != f {
		err = nil // the log was replaced meanwhile; its next Sync covers the new one
	}
	if err != nil || force || l.wrote == wrote {
		l.release(err != nil)
	}
	return err
}

// durable fsyncs the log, writes head and the checkpoints ck to the
// copy (Options.CopyDir) and head to the head file.
func (l *Log) durable(f *os.File, head Head, ck []Head) error {
	if err := f.Sync(); err != nil {
		return &WriteError{Path: l.path, Op: "fsync", Err: unwrapPath(err)}
	}
	if err := l.writeCopy(head, ck); err != nil {
		return err
	}
	if err := l.hf.write(head); err != nil {
		return &WriteError{Path: l.headPath, Op: "head", Err: unwrapPath(err),
			Detail: fmt.Sprintf("records up to seq %d appended, head not updated", head.Seq)}
	}
	return nil
}

// syncHeldLocked makes what Write left durable, best effort, and
// releases the lock; l.mu is held. A failure leaves the next step to
// catch up with the file.
func (l *Log) syncHeldLocked() {
	if !l.held {
		return
	}
	ck := l.ckPending
	l.ckPending = nil
	err := l.durable(l.f, l.head, ck)
	if err != nil {
		l.ckPending = ck
	}
	l.release(err != nil)
}

// release gives up the exclusive lock Write took; failed says the file
// may not be as this Log believes.
func (l *Log) release(failed bool) {
	if failed {
		l.known = false
	}
	l.held = false
	unlockFile(l.lock)
}

// HeadDue returns when Sync must run, with nothing new written, to make
// the head's last rewrite durable (Options.LazyHead with HeadSyncEvery):
// zero when every rewrite is durable. A writer that goes idle calls Sync
// then.
func (l *Log) HeadDue() time.Time { return l.hf.due() }
