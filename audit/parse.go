package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// Reading a record without a tree. Every line the writer writes is
// already in RFC 8785 form, so parseLine's work on it (jcs.Transform, a
// map of members, json.Unmarshal of each, json.Marshal and jcs again for
// the hash) reproduces the line it started from. A lineReader checks, in
// one pass over the bytes, that a line is in that form (canonicalEnd),
// and then reads the record's members straight from it; the chain hash
// is SHA-256 of prev and the line without its hash member. Where the
// check gives up (whitespace, members out of order, an escape it does not
// write itself, a key with an escape, a number whose RFC 8785 form is not
// its own text, nesting deeper than maxReadDepth, anything that is not
// JSON) or a member is not what a record needs, parseLine reads the line,
// so every result and every error is parseLine's (FuzzReadMatchesParse).

// maxReadDepth bounds the nesting a lineReader checks itself.
const maxReadDepth = 64

// maxInterned bounds the names a lineReader shares between records, and
// maxInternedLen their length: what it keeps is small whatever the log.
const (
	maxInterned    = 4096
	maxInternedLen = 64
)

// lineReader reads lines into records, reusing its buffers from one line
// to the next. It is not safe for concurrent use.
type lineReader struct {
	ms    []lineMember
	buf   []byte            // prev ‖ body, the chain hash's input
	esc   []byte            // a string's contents, unescaped
	names map[string]string // types, epochs, runs and field names seen
}

// lineMember is one member of a line's top-level object.
type lineMember struct {
	key        []byte // its name, without quotes; never has an escape
	val        []byte // its value
	start, end int    // the member in the line, from the key's quote to the value's end
}

// parse reads line (without its newline) as parseLine does. When fields
// is not nil and reports false for the record's type, Fields is nil (the
// member values are checked all the same); withHash false leaves the
// returned hash empty.
func (p *lineReader) parse(line []byte, fields func(typ string) bool, withHash bool) (Record, string, error) {
	if rec, sum, ok := p.fast(line, fields, withHash); ok {
		return rec, sum, nil
	}
	rec, sum, err := parseLine(line)
	if fields != nil && !fields(rec.Type) {
		rec.Fields = nil
	}
	if !withHash {
		sum = ""
	}
	return rec, sum, err
}

// fast reads a line in RFC 8785 form whose members are a record's; ok
// false for any other line.
func (p *lineReader) fast(line []byte, fields func(typ string) bool, withHash bool) (r Record, sum string, ok bool) {
	ms, ok := p.members(line)
	if !ok {
		return r, "", false
	}
	var have uint8 // bit per required member
	hashAt := -1
	for i := range ms {
		m := &ms[i]
		switch string(m.key) {
		case "v":
			v, ok := smallInt(m.val)
			if !ok || v != Version {
				return r, "", false
			}
			r.V, have = Version, have|1
		case "seq":
			if r.Seq, ok = smallInt(m.val); !ok || r.Seq < 1 {
				return r, "", false
			}
			have |= 2
		case "time":
			ts, ok := p.str(m.val, false)
			if !ok || ts == "" {
				return r, "", false
			}
			t, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				return r, "", false
			}
			r.Time, have = t.UTC(), have|4
		case "type":
			if r.Type, ok = p.str(m.val, true); !ok || r.Type == "" {
				return r, "", false
			}
			have |= 8
		case "epoch":
			if r.Epoch, ok = p.str(m.val, true); !ok {
				return r, "", false
			}
		case "run":
			if r.Run, ok = p.str(m.val, true); !ok {
				return r, "", false
			}
		case "prev":
			if !isDigest(m.val) {
				return r, "", false
			}
			r.Prev, have = string(m.val[1:len(m.val)-1]), have|16
		case "hash":
			if !isDigest(m.val) {
				return r, "", false
			}
			r.Hash, have, hashAt = string(m.val[1:len(m.val)-1]), have|32, i
		}
	}
	if have != 63 {
		return Record{}, "", false
	}
	if fields == nil || fields(r.Type) {
		r.Fields = p.fields(ms)
	}
	if withHash {
		sum = p.chainSum(line, r.Prev, ms, hashAt)
	}
	return r, sum, true
}

// fields returns the members of ms that are not a record's own, decoded;
// nil when there is none.
func (p *lineReader) fields(ms []lineMember) map[string]any {
	var f map[string]any
	for _, m := range ms {
		if isReserved(string(m.key)) {
			continue
		}
		if f == nil {
			f = make(map[string]any, len(ms)-6)
		}
		f[p.intern(m.key)] = p.value(m.val)
	}
	return f
}

// chainSum is chainHash(prev, body), the body being the line without its
// hash member ms[at]: the record's RFC 8785 form without it, as the
// members are in order.
func (p *lineReader) chainSum(line []byte, prev string, ms []lineMember, at int) string {
	from, to := ms[at].start, ms[at].end+1 // with the comma after it
	if at == len(ms)-1 {
		from, to = ms[at].start-1, ms[at].end // the last: with the comma before it
	}
	// prev ‖ body in one buffer, hashed by a function call (as the
	// encoder does): through hash.Hash, prev's bytes would be a heap copy.
	p.buf = append(append(append(p.buf[:0], prev...), line[:from]...), line[to:]...)
	sum := sha256.Sum256(p.buf)
	var digest [7 + 2*sha256.Size]byte
	copy(digest[:], "sha256:")
	hex.Encode(digest[7:], sum[:])
	return string(digest[:])
}

// members returns the members of line when line is one JSON object in
// RFC 8785 form that canonicalEnd takes whole.
func (p *lineReader) members(line []byte) ([]lineMember, bool) {
	p.ms = p.ms[:0]
	end := canonicalObject(line, 0, 1, &p.ms)
	return p.ms, end == len(line)
}

// intern returns b as a string, shared with earlier records.
func (p *lineReader) intern(b []byte) string {
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if p.names == nil {
		p.names = make(map[string]string)
	}
	if len(p.names) < maxInterned && len(s) <= maxInternedLen {
		p.names[s] = s
	}
	return s
}

// str returns the string value v (in RFC 8785 form) unescaped; ok false
// when v is not a string. shared interns it.
func (p *lineReader) str(v []byte, shared bool) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		// In RFC 8785 form: valid UTF-8, escapes only for ", \ and the
		// control bytes, each of which jsonstr.Append undoes.
		p.esc, _ = jsonstr.Append(p.esc[:0], body)
		return string(p.esc), true
	}
	if shared {
		return p.intern(body), true
	}
	return string(body), true
}

// value decodes v, in RFC 8785 form, as json.Decoder with UseNumber does
// into an any.
func (p *lineReader) value(v []byte) any {
	switch v[0] {
	case '"':
		s, _ := p.str(v, false)
		return s
	case 't':
		return true
	case 'f':
		return false
	case 'n':
		return nil
	case '{':
		var ms []lineMember
		canonicalObject(v, 0, 1, &ms)
		m := make(map[string]any, len(ms))
		for _, e := range ms {
			m[p.intern(e.key)] = p.value(e.val)
		}
		return m
	case '[':
		a := make([]any, 0)
		for i := 1; v[i] != ']'; {
			end := canonicalEnd(v, i, 1)
			a = append(a, p.value(v[i:end]))
			if i = end; v[i] == ',' {
				i++
			}
		}
		return a
	}
	return json.Number(v)
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// isDigest reports whether v is the JSON string "sha256:<64 lowercase
// hex digits>" with no escape, the form checkDigest takes (an escape in
// RFC 8785 form stands for a control byte or a quote, which checkDigest
// refuses too).
func isDigest(v []byte) bool {
	const prefix = `"sha256:`
	if len(v) != len(prefix)+2*sha256.Size+1 || string(v[:len(prefix)]) != prefix || v[len(v)-1] != '"' {
		return false
	}
	var bad byte // by table, with no branch per digit: hex digits are random
	for _, c := range v[len(prefix) : len(v)-1] {
		bad |= notHex[c]
	}
	return bad == 0
}

// notHex[c] is 1 unless c is 0-9 or a-f.
var notHex = func() (t [256]byte) {
	for c := range t {
		if !lowerHex(byte(c)) {
			t[c] = 1
		}
	}
	return t
}()

// smallInt reads v as a decimal integer of at most 18 digits.
func smallInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	d := v
	if neg {
		d = v[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
