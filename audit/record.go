package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
)

// Version is the schema version every record carries in its v member.
const Version = 1

// GenesisPrev is the prev of the first record (seq 1): "sha256:" followed by
// 64 zeros, the hash of no record.
const GenesisPrev = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// TimeLayout is the layout of a record's time member: RFC 3339 in UTC with
// exactly nine fractional digits, e.g. "2025-03-01T10:00:01.250000000Z".
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// MaxRecordSize is the largest record, in bytes of its line, that Append
// writes. The log holds digests and names, not payloads.
const MaxRecordSize = 1 << 20

// Event is what a caller records. Type is required and consists of
// lowercase ASCII letters, digits and underscores. Epoch and Run, when not
// empty, become the record's epoch and run members. Fields become further
// top-level members; their names must not be empty nor one of v, seq, time,
// type, epoch, run, prev, hash. Values are encoded with encoding/json, and
// integers beyond ±2^53 become strings (see the package doc). Fields must
// never hold a secret or a tool call's arguments. Attrs are more fields,
// under the same rules, given as a list: a record written for every call
// then costs no map; a name may appear once, in Fields or in Attrs.
type Event struct {
	Type   string
	Epoch  string
	Run    string
	Fields map[string]any
	Attrs  []Attr
	// Time is when the event happened; zero means when it is written.
	Time time.Time
	// Guards marks an event whose action the caller takes only once its
	// record is in the file (Log.Write returned it as written): a tool
	// call forwarded after its tool_called record. When the record
	// cannot be written the action is not taken, so nothing happened that
	// the log misses, and the record is not counted as lost.
	Guards bool
	// Checkpoint marks a record that anchors the log before it (a
	// presence-signed approval, whose signed proposal names the audit
	// head): with Options.CopyDir, its seq and hash are also appended to
	// the checkpoints file there (CopyCheckpointsPath) once it is
	// durable, and Verify checks the log still holds it.
	Checkpoint bool
}

// Record is one line of the log as read back.
type Record struct {
	V     int       // schema version, Version
	Seq   int64     // 1, 2, …
	Time  time.Time // in UTC
	Type  string
	Epoch string // empty when the record has none
	Run   string // empty when the record has none
	// Fields holds the members other than the ones above, decoded with
	// json.Decoder.UseNumber: numbers are json.Number, objects
	// map[string]any, arrays []any. Nil when there are none.
	Fields map[string]any
	Prev   string // hash of the previous record, GenesisPrev for seq 1
	Hash   string

	// Line is the 1-based line of the file the record was read from, or 0.
	// It is not part of the record.
	Line int
}

// TornLine names a line that never became a record, in the torn member of
// a log_recovered record.
type TornLine struct {
	Offset int64  `json:"offset"` // byte offset of the line's start in the log
	Bytes  int64  `json:"bytes"`  // length of the line, without its newline
	Digest string `json:"digest"` // "sha256:…" of those bytes
}

// digestOf returns "sha256:" + hex SHA-256 of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkDigest checks that s has the form "sha256:<64 lowercase hex>", the
// form of every hash and prev.
func checkDigest(s string) error {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return fmt.Errorf("%.80q is not sha256:<64 hex digits>", s)
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%.80q is not sha256:<64 lowercase hex digits>", s)
		}
	}
	return nil
}

func isReserved(name string) bool {
	switch name {
	case "v", "seq", "time", "type", "epoch", "run", "prev", "hash":
		return true
	}
	return false
}

func validType(t string) bool {
	if t == "" {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// check validates the event's type and field names (see Event).
func (ev Event) check() error {
	if !validType(ev.Type) {
		return fmt.Errorf("event type %q: want lowercase letters, digits and underscores", ev.Type)
	}
	for k := range ev.Fields {
		if k == "" || isReserved(k) {
			return fmt.Errorf("event %s: field name %q is reserved", ev.Type, k)
		}
	}
	for i, a := range ev.Attrs {
		if a.Key == "" || isReserved(a.Key) {
			return fmt.Errorf("event %s: field name %q is reserved", ev.Type, a.Key)
		}
		_, inFields := ev.Fields[a.Key]
		if inFields || slices.ContainsFunc(ev.Attrs[:i], func(b Attr) bool { return b.Key == a.Key }) {
			return fmt.Errorf("event %s: duplicate field name %.40q", ev.Type, a.Key)
		}
	}
	return nil
}

// parseLine decodes one line (without its newline) into a Record and
// returns the hash the record's contents call for, which equals r.Hash
// unless the record was altered. The error says why the line is not a
// record, naming the member at fault.
func parseLine(line []byte) (Record, string, error) {
	var r Record
	if len(line) == 0 {
		return r, "", errors.New("empty line")
	}
	canon, err := jcs.Transform(line)
	if err != nil {
		return r, "", fmt.Errorf("not JSON: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(canon, &m); err != nil {
		return r, "", errors.New("not a JSON object")
	}
	v, err := intMember(m, "v")
	if err != nil {
		return r, "", err
	}
	if v != Version {
		return r, "", fmt.Errorf("member \"v\": unsupported schema version %d", v)
	}
	r.V = int(v)
	if r.Seq, err = intMember(m, "seq"); err != nil {
		return r, "", err
	}
	if r.Seq < 1 {
		return r, "", fmt.Errorf("member \"seq\": %d is not positive", r.Seq)
	}
	ts, err := stringMember(m, "time", true)
	if err != nil {
		return r, "", err
	}
	if r.Time, err = time.Parse(time.RFC3339Nano, ts); err != nil {
		return r, "", fmt.Errorf("member \"time\": %q is not an RFC 3339 time", ts)
	}
	r.Time = r.Time.UTC()
	if r.Type, err = stringMember(m, "type", true); err != nil {
		return r, "", err
	}
	if r.Epoch, err = stringMember(m, "epoch", false); err != nil {
		return r, "", err
	}
	if r.Run, err = stringMember(m, "run", false); err != nil {
		return r, "", err
	}
	if r.Prev, err = digestMember(m, "prev"); err != nil {
		return r, "", err
	}
	if r.Hash, err = digestMember(m, "hash"); err != nil {
		return r, "", err
	}
	for k, raw := range m {
		if isReserved(k) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return r, "", fmt.Errorf("member %q: %v", k, err)
		}
		if r.Fields == nil {
			r.Fields = make(map[string]any)
		}
		r.Fields[k] = v
	}
	delete(m, "hash")
	body, err := canonical(m)
	if err != nil {
		return r, "", err
	}
	return r, chainHash(r.Prev, body), nil
}

func intMember(m map[string]json.RawMessage, name string) (int64, error) {
	raw, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("member %q missing", name)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("member %q: want an integer, have %.40s", name, raw)
	}
	return n, nil
}

func stringMember(m map[string]json.RawMessage, name string, required bool) (string, error) {
	raw, ok := m[name]
	if !ok {
		if required {
			return "", fmt.Errorf("member %q missing", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("member %q: want a string, have %.40s", name, raw)
	}
	if required && s == "" {
		return "", fmt.Errorf("member %q is empty", name)
	}
	return s, nil
}

func digestMember(m map[string]json.RawMessage, name string) (string, error) {
	s, err := stringMember(m, name, true)
	if err != nil {
		return "", err
	}
	if err := checkDigest(s); err != nil {
		return "", fmt.Errorf("member %q: %v", name, err)
	}
	return s, nil
}

// MarshalJSON returns the record as it appears on its line, in JCS
// canonical form, without the newline. Line is not included. (json.Marshal
// escapes <, > and & in what a MarshalJSON method returns; a json.Encoder
// with SetEscapeHTML(false) keeps the canonical bytes.)
func (r Record) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(r.Fields)+9)
	for k, v := range r.Fields {
		if isReserved(k) {
			return nil, fmt.Errorf("field name %q is reserved", k)
		}
		m[k] = v
	}
	m["v"] = r.V
	m["seq"] = r.Seq
	m["time"] = r.Time.UTC().Format(TimeLayout)
	m["type"] = r.Type
	if r.Epoch != "" {
		m["epoch"] = r.Epoch
	}
	if r.Run != "" {
		m["run"] = r.Run
	}
	m["prev"] = r.Prev
	m["hash"] = r.Hash
	return canonical(m)
}

// UnmarshalJSON decodes one record in the form MarshalJSON and the log
// use. It checks the members' types, not the hash.
func (r *Record) UnmarshalJSON(b []byte) error {
	rec, _, err := parseLine(b)
	if err != nil {
		return err
	}
	*r = rec
	return nil
}
