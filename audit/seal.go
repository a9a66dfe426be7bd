package audit

// Sealing a record: its canonical line (RFC 8785) and chain hash, built
// by an encoder that reuses its buffers and member order per kind of record.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gowebpki/jcs"
)

// canonical returns the JCS form of v.
func canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// chainHash returns "sha256:" + hex(SHA-256(prev ‖ body)).
func chainHash(prev string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(body)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// digestLen is the length of a hash or prev: "sha256:" and 64 hex digits.
const digestLen = 7 + 2*sha256.Size

// sealed is a record ready to be appended.
type sealed struct {
	line   []byte // with its newline
	seq    int64
	sum    [digestLen]byte // the record's hash, "sha256:…"
	typ    string
	time   time.Time
	guards bool // Event.Guards: not counted as lost when it is not written
	ev     int  // its event's index in the slice sealed
}

// hash returns the record's hash as a string.
func (s *sealed) hash() string { return string(s.sum[:]) }

// seal returns the line (with its newline) of the record for ev that
// follows a record with hash prev, numbered seq, written at t.
func seal(prev string, seq int64, t time.Time, ev Event) ([]byte, error) {
	_, s, err := sealRecord(nil, prev, seq, t, ev)
	return s.line, err
}

// sealRecord appends to buf the line of the record for ev (see seal),
// canonicalising each member once, and returns buf and the record.
func sealRecord(buf []byte, prev string, seq int64, t time.Time, ev Event) ([]byte, sealed, error) {
	var e encoder
	return e.seal(buf, prev, seq, t, ev)
}

// encoder seals records, reusing its buffers from one record to the next.
// It is not safe for concurrent use.
type encoder struct {
	scratch []byte // member values
	ms      []member
	idx     []int
	hashed  []byte // prev ‖ body (the record without its hash), the chain hash's input
	prev    []byte // the prev of the next record, for sealNext
	// shapes are the member orders of the last few kinds of record
	// sealed, next the one the next new kind replaces: a host writes a
	// few kinds over and over, each with the same members.
	shapes [4]shape
	next   int
}

// shape is the canonical layout of the records whose members have one
// list of names, in the order seal gathers them: for each member in key
// order (RFC 8785 §3.2.3), its index in that list and its name as JSON
// with the colon, and where the hash member goes.
type shape struct {
	keys   []string // the names, in the order seal gathers them
	idx    []int    // the members' indexes in key order
	names  []byte   // `"key":` of each member, in key order
	ends   []int    // where each member's name ends in names
	hashAt int      // the hash member goes before the member at idx[hashAt]
}

// matches reports whether ms has the names of s, in the same order.
func (s *shape) matches(ms []member) bool {
	if len(s.keys) != len(ms) {
		return false
	}
	for i := range ms {
		if s.keys[i] != ms[i].key {
			return false
		}
	}
	return true
}

// shapeOf returns the layout of a record with members ms, from the kinds
// seen last or, for a new kind, sorted anew.
func (e *encoder) shapeOf(ms []member) *shape {
	for i := range e.shapes {
		if s := &e.shapes[i]; s.matches(ms) {
			return s
		}
	}
	s := &e.shapes[e.next]
	e.next = (e.next + 1) % len(e.shapes)
	s.keys = s.keys[:0]
	for _, m := range ms {
		s.keys = append(s.keys, m.key)
	}
	s.idx = append(s.idx[:0], e.sortedIndex(ms)...)
	s.names, s.ends, s.hashAt = s.names[:0], s.ends[:0], -1
	for i, j := range s.idx {
		key := ms[j].key
		if s.hashAt < 0 && compareUTF16(key, "hash") > 0 {
			s.hashAt = i
		}
		s.names = append(appendString(s.names, key), ':')
		s.ends = append(s.ends, len(s.names))
	}
	return s
}

// sortedIndex returns the indexes of ms in key order (RFC 8785 §3.2.3),
// by insertion sort: records have a dozen members, and moving indexes
// instead of members spares the write barriers.
func (e *encoder) sortedIndex(ms []member) []int {
	idx := e.idx[:0]
	for i := range ms {
		idx = append(idx, i)
		for j := len(idx) - 1; j > 0 && compareUTF16(ms[idx[j-1]].key, ms[idx[j]].key) > 0; j-- {
			idx[j-1], idx[j] = idx[j], idx[j-1]
		}
	}
	e.idx = idx
	return idx
}

// seal appends to buf the line of the record for ev and returns buf and
// the record; see seal. It checks ev (Event.check).
func (e *encoder) seal(buf []byte, prev string, seq int64, t time.Time, ev Event) ([]byte, sealed, error) {
	if err := ev.check(); err != nil {
		return buf, sealed{}, err
	}
	e.prev = append(e.prev[:0], prev...)
	return e.sealNext(buf, seq, t, ev)
}

// sealNext is seal for an event its caller checked, after the record
// whose hash is e.prev; on success e.prev becomes the new record's hash.
func (e *encoder) sealNext(buf []byte, seq int64, t time.Time, ev Event) ([]byte, sealed, error) {
	t = t.UTC()
	sc, ms := e.scratch[:0], e.ms[:0]
	sc, ms, err := e.fieldMembers(sc, ms, ev)
	if err != nil {
		return buf, sealed{}, err
	}
	add := func(key string, val func([]byte) []byte) {
		start := len(sc)
		sc = val(sc)
		ms = append(ms, member{key: key, val: sc[start:len(sc):len(sc)]})
	}
	add("v", func(b []byte) []byte { return strconv.AppendInt(b, Version, 10) })
	add("seq", func(b []byte) []byte { return appendInt(b, seq) })
	add("time", func(b []byte) []byte { return append(appendTime(append(b, '"'), t), '"') })
	add("type", func(b []byte) []byte { return appendString(b, ev.Type) })
	add("prev", func(b []byte) []byte { return appendJSONBytes(b, e.prev) })
	if ev.Epoch != "" {
		add("epoch", func(b []byte) []byte { return appendString(b, ev.Epoch) })
	}
	if ev.Run != "" {
		add("run", func(b []byte) []byte { return appendString(b, ev.Run) })
	}
	e.scratch, e.ms = sc, ms[:0]
	start := len(buf)
	s := sealed{seq: seq, typ: ev.Type, time: t, guards: ev.Guards}
	buf = e.line(buf, &s.sum, ms)
	if len(buf)-start+1 > MaxRecordSize {
		return buf[:start], sealed{}, fmt.Errorf("event %s: record is %d bytes, more than %d", ev.Type, len(buf)-start+1, MaxRecordSize)
	}
	buf = append(buf, '\n')
	s.line = buf[start:]
	e.prev = append(e.prev[:0], s.sum[:]...)
	return buf, s, nil
}

// appendJSONBytes appends b as a JSON string; b is a hash, plain ASCII
// (checkDigest) or, from a caller, any string, escaped as appendString
// does.
func appendJSONBytes(buf, b []byte) []byte {
	for _, c := range b {
		if !jcsPlain[c] {
			return appendString(buf, string(b))
		}
	}
	buf = append(buf, '"')
	buf = append(buf, b...)
	return append(buf, '"')
}

// line appends to buf the record of members ms with its hash, and sets
// sum to the hash: "sha256:" + hex(SHA-256(prev ‖ body)), where prev is
// e.prev and the body is the record without "hash"; the line has "hash"
// inserted before the first member that sorts after it (there is one:
// "v").
func (e *encoder) line(buf []byte, sum *[digestLen]byte, ms []member) []byte {
	sh := e.shapeOf(ms)
	// The body is built right after prev, in the hash's input.
	hashed := append(e.hashed[:0], e.prev...)
	bodyAt, off := len(hashed), -1
	hashed = append(hashed, '{')
	name := 0
	for i, j := range sh.idx {
		if i > 0 {
			hashed = append(hashed, ',')
		}
		if i == sh.hashAt {
			off = len(hashed) - bodyAt
		}
		hashed = append(hashed, sh.names[name:sh.ends[i]]...)
		name = sh.ends[i]
		hashed = append(hashed, ms[j].val...)
	}
	hashed = append(hashed, '}')
	e.hashed = hashed
	d := sha256.Sum256(hashed)
	copy(sum[:], "sha256:")
	hex.Encode(sum[7:], d[:])
	body := hashed[bodyAt:]
	buf = append(buf, body[:off]...)
	buf = append(buf, `"hash":"`...)
	buf = append(buf, sum[:]...)
	buf = append(buf, `",`...)
	buf = append(buf, body[off:]...)
	return buf
}
