package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
)

// ErrClosed is returned by Append on a closed Log.
var ErrClosed = errors.New("audit: log is closed")

// maxTailLine bounds how far back Open and Append look for the start of a
// line at the end of the log, and maxTornLines how many lines that are not
// records they accept there, before giving up with a CorruptError.
const (
	maxTailLine  = 16 << 20
	maxTornLines = 64
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
}

// Log appends records to one log file. Its methods are safe for concurrent
// use, and any number of Logs, in any processes, may append to the same
// file (see the package doc).
type Log struct {
	mu       sync.Mutex
	path     string
	headPath string
	now      func() time.Time
	f        *os.File // the log, O_RDWR|O_APPEND
	lock     *os.File // the lock file
	closed   bool

	// known is true while size and head describe the file as this Log left
	// it at the end of its last locked step.
	known bool
	size  int64
	head  Head

	recoveries []Recovery
}

// Open opens the log at path, creating it (mode 0600) and its lock file
// (path without ".jsonl", plus ".lock", mode 0600) if needed; the directory
// must exist. It recovers a
// log damaged by a crash as the package doc describes, and reports each
// repair in Recoveries. It returns a *HeadMismatchError if the log does not
// end with the record the head file names (a truncated or replaced log), and
// a *CorruptError if the end of the log cannot be recovered.
func Open(path string, opts *Options) (*Log, error) {
	l := &Log{path: path, headPath: HeadPath(path), now: time.Now}
	if opts != nil {
		if opts.HeadPath != "" {
			l.headPath = opts.HeadPath
		}
		if opts.Now != nil {
			l.now = opts.Now
		}
	}
	lk, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l.lock = lk
	err = l.locked(func() error {
		if err := l.catchUp(); err != nil {
			return err
		}
		removeStaleTemps(l.headPath)
		return nil
	})
	if err != nil {
		l.lock.Close()
		if l.f != nil {
			l.f.Close()
		}
		return nil, err
	}
	return l, nil
}

// Path returns the log's path.
func (l *Log) Path() string { return l.path }

// Head returns the seq and hash of the last record this Log knows of (as of
// its last Open or Append); Seq is 0 and Hash GenesisPrev for an empty log.
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Recoveries returns the repairs made since Open, oldest first. Append can
// add to them when another process crashed while appending to the same log.
func (l *Log) Recoveries() []Recovery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Recovery(nil), l.recoveries...)
}

// Close closes the log. It does not write anything.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.f.Close()
	if err2 := l.lock.Close(); err == nil {
		err = err2
	}
	return err
}

// Append writes the record for ev, numbered one past the last record of the
// log, fsyncs it and rewrites the head file, all under the exclusive lock.
// It returns the record as written. If only the head file could not be
// rewritten, the record is in the log and Append returns it with the error;
// the next Append or Open rewrites the head. ev is validated as Event
// describes; an event type of TypeLogRecovered is refused.
func (l *Log) Append(ev Event) (Record, error) {
	if ev.Type == TypeLogRecovered {
		return Record{}, fmt.Errorf("audit: event type %s is written only by the log itself", ev.Type)
	}
	if _, err := ev.members(); err != nil {
		return Record{}, fmt.Errorf("audit: %v", err)
	}
	var rec Record
	err := l.locked(func() error {
		if err := l.catchUp(); err != nil {
			return err
		}
		var err error
		rec, err = l.write(nil, ev)
		return err
	})
	return rec, err
}

// locked runs fn holding l.mu and the exclusive file lock.
func (l *Log) locked(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := lockFile(l.lock, true); err != nil {
		return fmt.Errorf("audit: lock %s: %w", l.lock.Name(), err)
	}
	defer unlockFile(l.lock)
	return fn()
}

// write appends prefix and the record for ev, fsyncs, and rewrites the head.
func (l *Log) write(prefix []byte, ev Event) (Record, error) {
	line, err := seal(l.head.Hash, l.head.Seq+1, l.now(), ev)
	if err != nil {
		return Record{}, fmt.Errorf("audit: %v", err)
	}
	rec, _, err := parseLine(line[:len(line)-1])
	if err != nil {
		return Record{}, fmt.Errorf("audit: sealed record does not parse: %v", err)
	}
	if err := l.appendBytes(append(prefix, line...)); err != nil {
		return Record{}, err
	}
	l.head = Head{Seq: rec.Seq, Hash: rec.Hash}
	if err := writeHead(l.headPath, l.head); err != nil {
		l.known = false
		return rec, fmt.Errorf("audit: record seq %d appended but head not updated: %w", rec.Seq, err)
	}
	return rec, nil
}

// appendBytes appends b to the log and fsyncs it.
func (l *Log) appendBytes(b []byte) error {
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		l.known = false
		return fmt.Errorf("audit: append to %s: %w", l.path, err)
	}
	return nil
}

// catchUp makes l.head and l.size describe the log's current end, reopening
// the log if the file at l.path was replaced, and repairs what a crash left
// behind. It runs under the lock.
func (l *Log) catchUp() error {
	if err := l.reopenIfReplaced(); err != nil {
		return err
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if l.known && fi.Size() == l.size {
		return nil
	}
	t, err := scanTail(l.f, fi.Size())
	if err != nil {
		return err
	}
	l.size = fi.Size()
	l.head = t.last

	h, ok, err := ReadHead(l.headPath)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	headStale, headMissing := false, false
	switch {
	case !ok:
		// The log has records but no head: the head was deleted, perhaps
		// with records cut from the end. Rewriting it silently would make
		// the cut log verify as intact, so the gap goes into the chain.
		headMissing = t.last.Seq > 0
	case h == t.last:
	case h.Seq == t.last.Seq-1 && h.Hash == t.lastPrev:
		headStale = true
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredHead, Path: l.headPath, Seq: t.last.Seq,
			Detail: fmt.Sprintf("head was one record behind (seq %d); the writer stopped before updating it", h.Seq)})
	default:
		return &HeadMismatchError{LogPath: l.path, HeadPath: l.headPath, Log: t.last, Head: h}
	}

	var prefix []byte
	if !t.endsNL {
		prefix = []byte("\n")
	}
	fields := map[string]any{}
	if len(t.torn) > 0 {
		fields[FieldTorn] = t.torn
	}
	if headMissing {
		fields[FieldHead] = HeadMissing
	}
	switch {
	case len(fields) > 0:
		if prefix != nil && len(t.torn) == 0 {
			// The last record is complete and lacks only its newline.
			l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredNewline, Path: l.path, Seq: t.last.Seq})
		}
		rec, err := l.write(prefix, Event{Type: TypeLogRecovered, Fields: fields})
		if err != nil {
			return err
		}
		if len(t.torn) > 0 {
			l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredTorn, Path: l.path, Seq: rec.Seq, Torn: t.torn})
		}
		if headMissing {
			l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredHead, Path: l.headPath, Seq: rec.Seq,
				Detail: fmt.Sprintf("head file was missing with the log at seq %d; recorded as seq %d (%s %s=%s)",
					t.last.Seq, rec.Seq, TypeLogRecovered, FieldHead, HeadMissing)})
		}
	case prefix != nil:
		// The last record is complete and lacks only its newline.
		if err := l.appendBytes(prefix); err != nil {
			return err
		}
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredNewline, Path: l.path, Seq: t.last.Seq})
		fallthrough
	default:
		if headStale {
			if err := writeHead(l.headPath, l.head); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
		}
	}
	l.known = true
	return nil
}

// reopenIfReplaced opens l.path if no file is open yet or if the file at
// l.path is no longer the one open (moved aside, deleted, replaced).
func (l *Log) reopenIfReplaced() error {
	if l.f != nil {
		cur, err1 := l.f.Stat()
		now, err2 := os.Stat(l.path)
		if err1 == nil && err2 == nil && os.SameFile(cur, now) {
			return nil
		}
		l.f.Close()
		l.f = nil
		l.known = false
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	l.f = f
	return syncDir(filepath.Dir(l.path))
}

// tail is what scanTail found at the end of a log.
type tail struct {
	last     Head   // the last complete record; {0, GenesisPrev} if none
	lastPrev string // its prev
	endsNL   bool   // the file is empty or ends with "\n"
	torn     []TornLine
}

// scanTail reads the log backwards from size to its last complete record,
// collecting the lines after it that are not records.
func scanTail(f *os.File, size int64) (tail, error) {
	t := tail{last: Head{Hash: GenesisPrev}, endsNL: true}
	if size == 0 {
		return t, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err != nil {
		return t, fmt.Errorf("audit: read %s: %w", f.Name(), err)
	}
	t.endsNL = b[0] == '\n'
	end := size
	if t.endsNL {
		end--
	}
	for {
		start, line, err := lineBefore(f, end)
		if err != nil {
			return t, err
		}
		rec, sum, perr := parseLine(line)
		if perr == nil {
			if sum != rec.Hash {
				return t, &CorruptError{Path: f.Name(), Offset: start,
					Reason: fmt.Sprintf("record seq %d does not match its hash (edited)", rec.Seq)}
			}
			t.last = Head{Seq: rec.Seq, Hash: rec.Hash}
			t.lastPrev = rec.Prev
			break
		}
		t.torn = append([]TornLine{{Offset: start, Bytes: end - start, Digest: digestOf(line)}}, t.torn...)
		if len(t.torn) > maxTornLines {
			return t, &CorruptError{Path: f.Name(), Offset: start,
				Reason: fmt.Sprintf("more than %d lines at the end are not records", maxTornLines)}
		}
		if start == 0 {
			break
		}
		end = start - 1
	}
	return t, nil
}

// lineBefore returns the line that ends at offset end (exclusive, at a
// newline or the end of the file) and its start offset.
func lineBefore(f *os.File, end int64) (int64, []byte, error) {
	const chunk = 64 << 10
	var line []byte
	pos := end
	for pos > 0 {
		n := min(int64(chunk), pos)
		if int64(len(line))+n > maxTailLine {
			return 0, nil, &CorruptError{Path: f.Name(), Offset: pos,
				Reason: fmt.Sprintf("line ending at offset %d is longer than %d bytes", end, maxTailLine)}
		}
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos-n); err != nil && err != io.EOF {
			return 0, nil, fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return pos - n + int64(i) + 1, append(buf[i+1:], line...), nil
		}
		line = append(buf, line...)
		pos -= n
	}
	return 0, line, nil
}

// ReadHead reads the head file at path. ok is false, with a nil error, if
// the file does not exist. A malformed file is an error naming the file and
// the member at fault.
func ReadHead(path string) (h Head, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	var m struct {
		V    *int   `json:"v"`
		Seq  *int64 `json:"seq"`
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Head{}, false, fmt.Errorf("%s: not a head file: %v", path, err)
	}
	switch {
	case m.V == nil || *m.V != Version:
		return Head{}, false, fmt.Errorf("%s: member \"v\": want %d", path, Version)
	case m.Seq == nil || *m.Seq < 1:
		return Head{}, false, fmt.Errorf("%s: member \"seq\": want a positive integer", path)
	}
	if err := checkDigest(m.Hash); err != nil {
		return Head{}, false, fmt.Errorf("%s: member \"hash\": %v", path, err)
	}
	return Head{Seq: *m.Seq, Hash: m.Hash}, true, nil
}

// writeHead writes h to path atomically: temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeHead(path string, h Head) error {
	b, err := canonical(map[string]any{"v": Version, "seq": h.Seq, "hash": h.Hash})
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// removeStaleTemps removes temporary head files a writer killed in
// writeHead left behind. It runs under the exclusive lock, when no head is
// being written.
func removeStaleTemps(headPath string) {
	pattern := filepath.Join(filepath.Dir(headPath), "."+filepath.Base(headPath)+".tmp-*")
	names, _ := filepath.Glob(pattern)
	for _, n := range names {
		os.Remove(n)
	}
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

// RecoveryKind says what a Recovery repaired.
type RecoveryKind string

const (
	// RecoveredTorn: lines that never became records were closed and named
	// by a log_recovered record.
	RecoveredTorn RecoveryKind = "torn"
	// RecoveredNewline: the last record was complete but lacked its
	// newline, which was appended.
	RecoveredNewline RecoveryKind = "newline"
	// RecoveredHead: the head file was one record behind and was
	// rewritten, or it was missing and a log_recovered record with
	// head=missing was appended (which rewrote it).
	RecoveredHead RecoveryKind = "head"
)

// Recovery is one repair a Log made to a log a crash left behind. It is a
// warning for the operator; String gives a one-line message.
type Recovery struct {
	Kind RecoveryKind
	Path string // the file repaired
	// Seq is the log_recovered record's seq (RecoveredTorn), the record
	// that got its newline (RecoveredNewline), or the seq the head now
	// names (RecoveredHead; for a missing head, the log_recovered record).
	Seq    int64
	Torn   []TornLine // RecoveredTorn only
	Detail string     // RecoveredHead only
}

func (r Recovery) String() string {
	switch r.Kind {
	case RecoveredTorn:
		var n int64
		for _, t := range r.Torn {
			n += t.Bytes
		}
		return fmt.Sprintf("%s: %d torn line(s), %d bytes from offset %d, never became records; closed and recorded as seq %d (%s)",
			r.Path, len(r.Torn), n, r.Torn[0].Offset, r.Seq, TypeLogRecovered)
	case RecoveredNewline:
		return fmt.Sprintf("%s: seq %d was complete but lacked its newline; newline appended", r.Path, r.Seq)
	default:
		return fmt.Sprintf("%s: %s; rewritten to seq %d", r.Path, r.Detail, r.Seq)
	}
}

// HeadMismatchError means the log does not end with the record its head
// file names: its tail was cut off, or the log or the head was replaced.
type HeadMismatchError struct {
	LogPath, HeadPath string
	Log               Head // the log's last complete record ({0, GenesisPrev} if none)
	Head              Head // what the head file names
}

func (e *HeadMismatchError) Error() string {
	if e.Head.Seq > e.Log.Seq {
		return fmt.Sprintf("audit: %s ends at seq %d but %s records seq %d: the log was truncated; run mcpepoch audit verify",
			e.LogPath, e.Log.Seq, e.HeadPath, e.Head.Seq)
	}
	return fmt.Sprintf("audit: %s ends at seq %d (%s) but %s records seq %d (%s): log or head was replaced; run mcpepoch audit verify",
		e.LogPath, e.Log.Seq, e.Log.Hash, e.HeadPath, e.Head.Seq, e.Head.Hash)
}

// CorruptError means the end of the log cannot be recovered automatically:
// its last record was altered, or too much of it is not records.
type CorruptError struct {
	Path   string
	Offset int64 // byte offset of the line at fault
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("audit: %s: offset %d: %s; run mcpepoch audit verify", e.Path, e.Offset, e.Reason)
}
