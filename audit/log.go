package audit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by Append on a closed Log.
var ErrClosed = errors.New("audit: log is closed")

// maxTailLine bounds how far back Open and Append look for the start of a
// line at the end of the log, and maxTornLines how many lines that are not
// records they accept there, before giving up with a CorruptError. Verify
// reports a tail past either bound as a problem (ProblemTailTooLong), so
// the two agree. Variables only so that tests can lower them.
var (
	maxTailLine  int64 = 16 << 20
	maxTornLines       = 64
)

// HeadPath returns the head file path for the log at logPath: logPath with
// a final ".jsonl" replaced by ".head" (".mcpepoch/audit.jsonl" →
// ".mcpepoch/audit.head"), or with ".head" appended otherwise.
func HeadPath(logPath string) string {
	return strings.TrimSuffix(logPath, ".jsonl") + ".head"
}

// lockPath returns the lock file path for the log at logPath, formed like
// HeadPath with ".lock". It does not depend on Options, so every Log of
// one log uses the same lock.
func lockPath(logPath string) string {
	return strings.TrimSuffix(logPath, ".jsonl") + ".lock"
}

// Head is the seq and hash of the last record of a log. The head file holds
// it as {"hash":…,"seq":…,"v":1}.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// Options adjusts Open. The zero value and nil mean the defaults.
type Options struct {
	// HeadPath is the head file. Default: HeadPath(path).
	HeadPath string
	// Now returns the time written into each record. Default: time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for the exclusive lock; an append that
	// cannot take it in time fails with a *WriteError (Op "lock").
	// Default: DefaultLockTimeout.
	LockTimeout time.Duration
	// LazyHead rewrites the head file in place without its fdatasync
	// (the copy of the head, CopyDir, is synced all the same). Records
	// are fsynced as always and the head is rewritten only after them,
	// so a head never names a record the log lacks; a machine that stops
	// may lose the head's last rewrites instead (a process that dies
	// loses none: they are in the kernel), and the next Open finds the
	// head behind a chain that leads back to it and brings it up to date
	// (a Recovery); Verify warns, naming how many records and since when
	// (WarnHeadBehind). Records appended since the last head that reached
	// the disk could then be cut from the end unseen by the head file
	// (not by a copy of the head, which is synced). Without
	// HeadSyncEvery, for a log appended to by short-lived writers, one
	// record each (the builds log: each mcpepoch record with no host
	// listening), where the second sync was as costly as the first.
	LazyHead bool
	// HeadSyncEvery, with LazyHead, bounds how long a head rewrite waits
	// for its fdatasync: the step that rewrites it syncs it when the
	// oldest rewrite not yet synced is this old, Sync syncs it once it is
	// due even with nothing new written (HeadDue says when), and Close
	// syncs it. So a machine that stops loses at most this long of head
	// rewrites, plus what a Sync under way had not finished. Zero: the
	// head is synced only when rewritten atomically.
	HeadSyncEvery time.Duration
	// CopyDir, when set, is a directory outside the project (the user's
	// state directory for it) where every step also keeps a copy of the
	// head (CopyHeadPath) and the seq and hash of every checkpoint record
	// (CopyCheckpointsPath), after the records are durable and before the
	// head file is rewritten; the directory is made (mode 0700) when
	// missing. A copy that cannot be written fails the step as a head
	// that cannot be written does. The catch-up compares the copy with the
	// log: missing (while the log has records), torn, or behind a chain
	// that leads back to it is recorded in a log_recovered record
	// (FieldCopy) and the copy written again; anything else (the log
	// rewritten or cut) is a *CopyMismatchError, and nothing is appended.
	// See the package doc, "Copy of the head".
	CopyDir string
}

// maxKeptBuf is the largest write buffer a Log keeps between steps.
const maxKeptBuf = 1 << 20

// keptRecs is the most records whose array a Log keeps between steps.
const keptRecs = 1024

// DefaultLockTimeout is how long an append waits for another writer's lock.
const DefaultLockTimeout = 5 * time.Second

// Log appends records to one log file. Its methods are safe for concurrent
// use, and any number of Logs, in any processes, may append to the same
// file (see the package doc).
type Log struct {
	mu          sync.Mutex
	path        string
	headPath    string
	lostPath    string
	now         func() time.Time
	lockTimeout time.Duration
	buf         []byte   // reused by commit
	enc         encoder  // reused by commit
	recs        []sealed // reused by put
	f           *os.File // the log, O_RDWR|O_APPEND
	fid         fileID   // f's device and inode
	lock        *os.File // the lock file
	hf          headFile // the head file, kept open between rewrites
	closed      bool

	// With Options.CopyDir: cf is the copy of the head, ckPath the
	// checkpoints file, ckPending the checkpoint records Write put in the
	// file that no Sync has copied yet.
	copyDir   string
	cf        headFile
	ckPath    string
	ckPending []Head

	// Between Write and Sync (write.go): held says this Log holds the
	// exclusive lock, since heldSince; wrote counts Write's appends, so
	// that Sync knows whether more came while it waited on the disk.
	// syncMu orders Syncs and Close.
	held      bool
	heldSince time.Time
	wrote     int64
	syncMu    sync.Mutex

	// known is true while size and head describe the file as this Log left
	// it at the end of its last locked step.
	known bool
	size  int64
	head  Head

	recoveries []Recovery

	lost  tally // events not written, for the next records_lost record
	carry carry // what the records_lost record being written carries
	gaps  int   // records_lost records written
}

// Open opens the log at path, creating it (mode 0600) and its lock file
// (path without ".jsonl", plus ".lock", mode 0600) if needed; the directory
// must exist. It recovers a
// log damaged by a crash as the package doc describes, and reports each
// repair in Recoveries. It returns a *HeadMismatchError if the log does not
// end with the record the head file names (a truncated or replaced log), and
// a *CorruptError if the end of the log cannot be recovered.
func Open(path string, opts *Options) (*Log, error) {
	l := &Log{path: path, headPath: HeadPath(path), lostPath: LostPath(path), now: time.Now, lockTimeout: DefaultLockTimeout}
	if opts != nil {
		if opts.HeadPath != "" {
			l.headPath = opts.HeadPath
		}
		if opts.Now != nil {
			l.now = opts.Now
		}
		if opts.LockTimeout > 0 {
			l.lockTimeout = opts.LockTimeout
		}
		l.hf.lazy, l.hf.every = opts.LazyHead, opts.HeadSyncEvery
		if opts.CopyDir != "" {
			l.copyDir = opts.CopyDir
			l.cf = headFile{path: CopyHeadPath(opts.CopyDir, path)}
			l.ckPath = CopyCheckpointsPath(opts.CopyDir, path)
		}
	}
	lk, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l.lock = lk
	l.hf.path = l.headPath
	err = l.locked(nil, func() error {
		if err := l.catchUp(); err != nil {
			return err
		}
		removeStaleTemps(l.headPath)
		return nil
	})
	if err != nil {
		l.lock.Close()
		l.hf.close()
		l.cf.close()
		if l.f != nil {
			l.f.Close()
		}
		return nil, err
	}
	return l, nil
}

// Path returns the log's path.
func (l *Log) Path() string { return l.path }

// Recoveries returns the repairs made since Open, oldest first. Append can
// add to them when another process crashed while appending to the same log.
func (l *Log) Recoveries() []Recovery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Recovery(nil), l.recoveries...)
}

// Close closes the log. It writes nothing new; what Write left in the
// file is made durable first, as Sync would.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.held {
		l.syncHeldLocked()
	}
	l.closed = true
	if l.hf.every > 0 {
		l.hf.syncNow() // a clean stop leaves the head durable
	}
	l.hf.close()
	l.cf.close()
	err := l.f.Close()
	if err2 := l.lock.Close(); err == nil {
		err = err2
	}
	return err
}

// Append writes the record for ev, numbered one past the last record of
// the log, under the exclusive lock (one write(2), one fsync, one rewrite
// of the head file), and returns it as written. ev is validated as Event
// describes; an event type of TypeLogRecovered or TypeRecordsLost is
// refused.
//
// When the record cannot be written (the lock cannot be taken within
// Options.LockTimeout, the log is damaged, or a write, fsync or head
// rewrite fails: ENOSPC, EIO, EROFS…) the error is a *WriteError naming the
// file and the OS error, or a *HeadMismatchError or *CorruptError. An
// event that did not reach the log is then counted as lost, by type and
// time, and the next step that succeeds, in this Log or (through the
// sidecar file, see the package doc) in any other, first appends a
// records_lost record (TypeRecordsLost) that names it; an event whose
// fields cannot be encoded (see Event) is refused.
func (l *Log) Append(ev Event) (Record, error) {
	if ev.Type != TypeLogRecovered && ev.Type != TypeRecordsLost {
		if _, err := seal(GenesisPrev, 1, time.Time{}, ev); err != nil {
			return Record{}, fmt.Errorf("audit: %v", err)
		}
	}
	lines, err := l.appendBatch([]Event{ev}, true)
	if len(lines) == 0 {
		return Record{}, err
	}
	rec, _, perr := parseLine(lines[len(lines)-1])
	if perr != nil {
		return Record{}, fmt.Errorf("audit: sealed record does not parse: %v", perr)
	}
	return rec, err
}

func (l *Log) appendBatch(evs []Event, keepLines bool) ([][]byte, error) {
	for _, ev := range evs {
		if ev.Type == TypeLogRecovered || ev.Type == TypeRecordsLost {
			return nil, fmt.Errorf("audit: event type %s is written only by the log itself", ev.Type)
		}
		if err := ev.check(); err != nil {
			return nil, fmt.Errorf("audit: %v", err)
		}
	}
	var lines [][]byte
	for {
		n := min(len(evs), MaxBatch)
		step := evs[:n]
		err := l.locked(step, func() error {
			if err := l.catchUp(); err != nil {
				l.loseAll(step, err)
				return err
			}
			withLost, err := l.withLost(step)
			if err != nil {
				l.loseAll(step, err)
				return &WriteError{Path: l.lostPath, Op: "read", Err: unwrapPath(err), Lost: len(step),
					Detail: "the count of lost records cannot be read; move it aside"}
			}
			recs, err := l.commit(nil, withLost)
			if keepLines {
				for _, r := range recs {
					lines = append(lines, slices.Clone(r.line[:len(r.line)-1]))
				}
			}
			return err
		})
		evs = evs[n:]
		if err != nil {
			if err != ErrClosed {
				l.mu.Lock()
				l.lose(evs, err)
				l.mu.Unlock()
			}
			return lines, err
		}
		if len(evs) == 0 {
			return lines, nil
		}
	}
}

// locked runs fn holding l.mu and the exclusive file lock. If the lock
// cannot be taken, the events of evs are counted as lost; fn counts its own.
func (l *Log) locked(evs []Event, fn func() error) error {
	l.syncMu.Lock() // not while a Sync writes outside l.mu
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.held {
		// What Write left is made durable first; the step then locks anew.
		l.syncHeldLocked()
	}
	if err := lockFile(l.lock, true, l.lockTimeout); err != nil {
		err = &WriteError{Path: l.lock.Name(), Op: "lock", Err: unwrapPath(err)}
		l.lose(evs, err)
		l.saveLost() // without the lock: best effort, so a writer that ends now leaves the count
		return err
	}
	defer unlockFile(l.lock)
	return fn()
}

// commit seals the records for evs, appends prefix and them in one write,
// fsyncs, and rewrites the head. On failure the records that did not
// reach the file are counted as lost (a records_lost record among them
// puts back what it carried), and the error is a *WriteError.
func (l *Log) commit(prefix []byte, evs []Event) ([]sealed, error) {
	recs, head, err := l.put(prefix, evs)
	if err != nil || len(recs) == 0 && len(prefix) == 0 {
		return recs, err
	}
	if err := l.f.Sync(); err != nil {
		l.known = false
		werr := &WriteError{Path: l.path, Op: "fsync", Err: unwrapPath(err)}
		werr.Lost = l.failed(recs, recsLen(recs), werr) // all in the file, durable or not
		return recs, werr
	}
	l.head = head
	l.accounted(recs)
	if err := l.writeCopy(l.head, checkpointsOf(recs, evs)); err != nil {
		l.known = false
		return recs, err
	}
	if err := l.hf.write(l.head); err != nil {
		l.known = false
		return recs, &WriteError{Path: l.headPath, Op: "head", Err: unwrapPath(err),
			Detail: fmt.Sprintf("records up to seq %d appended, head not updated", l.head.Seq)}
	}
	return recs, nil
}

// recsLen is the length of the lines of recs.
func recsLen(recs []sealed) int {
	n := 0
	for _, r := range recs {
		n += len(r.line)
	}
	return n
}

// put seals the records for evs and appends prefix and them in one
// write(2), without an fsync: it returns them and the head after them.
// On a failed or short write the records that did not reach the file are
// counted as lost and the error is a *WriteError; l.head is not moved. So
// it is when the log's path no longer names the open file after the
// write (stillAtPath): the records are then in no log.
func (l *Log) put(prefix []byte, evs []Event) ([]sealed, Head, error) {
	buf := append(l.buf[:0], prefix...)
	recs := l.recs[:0]
	head := l.head
	l.enc.prev = append(l.enc.prev[:0], head.Hash...)
	seq := head.Seq
	for i, ev := range evs {
		var at time.Time
		if ev.Type == TypeRecordsLost || ev.Time.IsZero() {
			at = l.now()
		} else {
			at = ev.Time
		}
		var r sealed
		var err error
		if ev.Type == TypeRecordsLost || ev.Type == TypeLogRecovered {
			// The log's own records; a caller's were checked when
			// they were handed over (Write, Append).
			err = ev.check()
		}
		if err == nil {
			buf, r, err = l.enc.sealNext(buf, seq+1, at, ev)
		}
		if err != nil {
			// A record that cannot be encoded is refused alone; it is
			// counted so that the log says something was not written.
			if !ev.Guards {
				l.lost.add(ev.Type, at, fmt.Errorf("record not encodable: %v", err))
			}
			continue
		}
		r.ev = i
		recs = append(recs, r)
		seq = r.seq
	}
	if len(recs) > 0 {
		head = Head{Seq: seq, Hash: recs[len(recs)-1].hash()}
	}
	if cap(recs) <= keptRecs {
		l.recs = recs[:0] // valid, as buf is, until the next put
	}
	if cap(buf) <= maxKeptBuf {
		l.buf = buf[:0]
	} else {
		l.buf = nil // a burst's buffer is not kept for the host's lifetime
	}
	if len(buf) == 0 {
		return nil, head, nil
	}
	n, err := l.f.Write(buf)
	l.size += int64(n)
	if err != nil {
		l.known = false
		werr := &WriteError{Path: l.path, Op: "write", Err: unwrapPath(err)}
		werr.Lost = l.failed(recs, n-len(prefix), werr)
		return recs, head, werr
	}
	// The path may have been given to another file since the catch-up:
	// then the records are in no log, and the actions they guard must
	// not be taken.
	if werr := l.stillAtPath(); werr != nil {
		l.known = false
		werr.Lost = l.failed(recs, 0, werr)
		return recs, head, werr
	}
	return recs, head, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: sync %s: %w", dir, err)
	}
	return nil
}
