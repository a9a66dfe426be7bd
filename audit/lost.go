package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// TypeRecordsLost is the type of the record a Log appends, before anything
// else, at the first step that succeeds after records could not be
// written. It is written only by the Log; Append refuses it. Its members:
//
//	records  how many records were lost, as a decimal string
//	types    an object: event type → how many of that type, decimal strings
//	from     the time of the first lost record (TimeLayout)
//	to       the time of the last lost record (TimeLayout)
//	error    what failed first, naming the file and the OS error
//
// Verify reports each one as a warning (WarnRecordsLost).
const TypeRecordsLost = "records_lost"

// MaxBatch is the most records one Write writes.
const MaxBatch = 4096

// LostPath returns the sidecar file for the log at logPath, formed like
// HeadPath with ".lost". It holds the count of lost records (the members of
// a records_lost record, and "v") while no step has succeeded to record
// them in the log, so that a process that ends before then (the build
// hook) does not take the count with it. It is removed once the
// records_lost record is in the log.
func LostPath(logPath string) string {
	return strings.TrimSuffix(logPath, ".jsonl") + ".lost"
}

// maxLostFile caps how much of a sidecar file is read.
const maxLostFile = 64 << 10

// tally counts records that could not be written.
type tally struct {
	n        int64
	types    map[string]int64
	from, to time.Time
	err      string // the first failure
}

func (t *tally) empty() bool { return t.n == 0 }

func (t *tally) add(typ string, at time.Time, err error) {
	cause := strings.TrimPrefix(err.Error(), "audit: ")
	var we *WriteError
	if errors.As(err, &we) {
		cause = we.cause()
	}
	t.merge(tally{n: 1, types: map[string]int64{typ: 1}, from: at, to: at, err: cause})
}

func (t *tally) merge(o tally) {
	if o.n == 0 {
		return
	}
	if t.n == 0 || o.from.Before(t.from) {
		t.from = o.from
	}
	if t.n == 0 || o.to.After(t.to) {
		t.to = o.to
	}
	if t.err == "" {
		t.err = o.err
	}
	t.n += o.n
	if t.types == nil {
		t.types = map[string]int64{}
	}
	for k, v := range o.types {
		t.types[k] += v
	}
}

// fields returns the members of the records_lost record for t.
func (t *tally) fields() map[string]any {
	types := make(map[string]string, len(t.types))
	for k, v := range t.types {
		types[k] = strconv.FormatInt(v, 10)
	}
	return map[string]any{
		"records": strconv.FormatInt(t.n, 10),
		"types":   types,
		"from":    t.from.UTC().Format(TimeLayout),
		"to":      t.to.UTC().Format(TimeLayout),
		"error":   t.err,
	}
}

// parseLost reads the members fields gives from a records_lost record or
// a sidecar file.
func parseLost(m map[string]any) (tally, error) {
	var t tally
	s, _ := m["records"].(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return t, fmt.Errorf("member \"records\": want a count as a decimal string")
	}
	t.n = n
	t.types = map[string]int64{}
	types, _ := m["types"].(map[string]any)
	for k, v := range types {
		vs, _ := v.(string)
		c, err := strconv.ParseInt(vs, 10, 64)
		if err != nil || c < 0 {
			return t, fmt.Errorf("member \"types\": %q: want a count as a decimal string", k)
		}
		t.types[k] = c
	}
	for name, p := range map[string]*time.Time{"from": &t.from, "to": &t.to} {
		s, _ := m[name].(string)
		if *p, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return t, fmt.Errorf("member %q: want an RFC 3339 time", name)
		}
	}
	t.err, _ = m["error"].(string)
	return t, nil
}

// summary is the tally in words: "12 records (tool_called 6, tool_result 6)
// between … and …".
func (t *tally) summary() string {
	parts := make([]string, 0, len(t.types))
	for _, k := range slices.Sorted(maps.Keys(t.types)) {
		parts = append(parts, fmt.Sprintf("%s %d", printable(k), t.types[k]))
	}
	return fmt.Sprintf("%d record(s) (%s) between %s and %s", t.n, strings.Join(parts, ", "),
		t.from.UTC().Format(TimeLayout), t.to.UTC().Format(TimeLayout))
}

// carry is what the records_lost record being written accounts for: the
// tally taken from memory, and whether the sidecar file's count is in it.
type carry struct {
	mem  tally
	file bool
}

// readLost reads the sidecar file. A missing file is an empty tally; a
// malformed one is kept as is and counted as one unknown loss, so that the
// log still says something was lost. A file that cannot be read at all (not
// a regular file, a symbolic link, over maxLostFile bytes, unreadable) is an
// error naming it: the count it may hold cannot be accounted for, and the
// open never blocks (a FIFO there would otherwise stop every writer while
// it holds the lock).
func readLost(path string) (tally, bool, error) {
	b, err := safefile.ReadFileNoFollow(path, maxLostFile)
	if errors.Is(err, os.ErrNotExist) {
		return tally{}, false, nil
	}
	if err != nil {
		return tally{}, false, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	t, perr := parseLost(m)
	if err != nil || perr != nil {
		at := time.Now()
		if fi, serr := os.Lstat(path); serr == nil {
			at = fi.ModTime()
		}
		return tally{n: 1, types: map[string]int64{"unknown": 1}, from: at, to: at,
			err: fmt.Sprintf("%s: unreadable count of lost records", path)}, true, nil
	}
	return t, true, nil
}

// saveLost moves the in-memory tally into the sidecar file, if it can be
// written; otherwise the tally stays in memory. It runs under the lock,
// except when the lock could not be taken: then a writer holding it may
// record the file's count at the same moment and this one's is lost from
// the file, never counted twice.
func (l *Log) saveLost() {
	if l.lost.empty() {
		return
	}
	t := l.lost
	f, ok, err := readLost(l.lostPath)
	if err != nil {
		return // the count stays in memory; the file is kept for a person to look at
	}
	if ok {
		t.merge(f)
	}
	m := t.fields()
	m["v"] = Version
	b, err := canonical(m)
	if err == nil && atomicfile.Write(l.lostPath, append(b, '\n'), 0o600) == nil {
		l.lost = tally{}
	}
}

// NoteLost counts ev as lost for the log at logPath when no Log could be
// opened to append it (Open failed: the lock held too long, the disk full,
// the log damaged): it adds the event to the sidecar file (LostPath), best
// effort and without the lock, so that the next writer's records_lost
// record names it. cause is why it was not written. The error is the
// sidecar's, if it could not be written either.
func NoteLost(logPath string, ev Event, cause error) error {
	l := &Log{lostPath: LostPath(logPath)}
	l.lost.add(ev.Type, time.Now(), cause)
	l.saveLost()
	if !l.lost.empty() {
		return fmt.Errorf("audit: %s: could not count the lost %s record", l.lostPath, ev.Type)
	}
	return nil
}

// withLost puts a records_lost record before evs when records were lost.
// It runs under the lock. The error is readLost's.
func (l *Log) withLost(evs []Event) ([]Event, error) {
	t := l.lost
	file, ok, err := readLost(l.lostPath)
	if err != nil {
		return nil, err
	}
	if ok {
		t.merge(file)
	}
	if t.empty() {
		return evs, nil
	}
	l.carry = carry{mem: l.lost, file: ok}
	l.lost = tally{}
	return append([]Event{{Type: TypeRecordsLost, Fields: t.fields()}}, evs...), nil
}

// Gaps returns how many records_lost records this Log has written since
// Open.
func (l *Log) Gaps() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gaps
}

// settle marks the carried count as recorded in the log.
func (l *Log) settle() {
	l.gaps++
	if l.carry.file {
		os.Remove(l.lostPath)
	}
	l.carry = carry{}
}

// accounted is called after recs reached the log.
func (l *Log) accounted(recs []sealed) {
	if len(recs) > 0 && recs[0].typ == TypeRecordsLost {
		l.settle()
	}
}

// failed counts the records of recs that did not reach the log: those past
// the first written bytes of the failed write (an fsync that failed after
// a whole write leaves them all in the file, durable or not). It returns
// how many were lost.
func (l *Log) failed(recs []sealed, written int, err error) int {
	off, lost := 0, 0
	for _, r := range recs {
		off += len(r.line)
		switch {
		case off <= written && r.typ == TypeRecordsLost:
			l.settle()
		case off <= written:
		case r.typ == TypeLogRecovered:
			// The next step finds the damage again and records it anew.
		case r.typ == TypeRecordsLost:
			l.lost.merge(l.carry.mem)
			l.carry = carry{}
		case r.guards:
			// Its action is not taken: nothing to count.
		default:
			l.lost.add(r.typ, r.time, err)
			lost++
		}
	}
	l.saveLost()
	return lost
}

// eventTime is when ev happened: its Time, else now.
func (l *Log) eventTime(ev Event) time.Time {
	if !ev.Time.IsZero() {
		return ev.Time
	}
	return l.now()
}

// loseAll counts evs as lost; it runs under the lock.
func (l *Log) loseAll(evs []Event, err error) {
	l.lose(evs, err)
	l.saveLost()
}

// lose counts evs as lost in memory, but for those that guard an action
// (Event.Guards), whose action is then not taken.
func (l *Log) lose(evs []Event, err error) {
	for _, ev := range evs {
		if !ev.Guards {
			l.lost.add(ev.Type, l.eventTime(ev), err)
		}
	}
}
