package audit

import (
	"encoding/json"
	"errors"
)

// Head returns the seq and hash of the last record this Log knows of (as of
// its last Open or Append); Seq is 0 and Hash GenesisPrev for an empty log.
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// AppendBatch is Write and Sync in one step, returning the head after
// the batch: the tests' synchronous writer. With no events it writes only
// a pending records_lost record, if any.
func (l *Log) AppendBatch(evs []Event) (Head, error) {
	_, err := l.appendBatch(evs, false)
	return l.Head(), err
}

// canonicalFast returns the RFC 8785 form of in, or ok false (see above).
func canonicalFast(in []byte) (out []byte, ok bool) {
	var c fastCanon
	c.out = make([]byte, 0, len(in))
	return c.canonical(in)
}

// ArgsDigest returns "sha256:" + hex SHA-256 of the JCS canonical form
// (RFC 8785) of a tool call's arguments, unkeyed. Records written before
// digests were keyed carry it; new records carry Key.ArgsDigest, because
// an unkeyed digest of a short secret (a PIN) is found by trying values.
func ArgsDigest(raw json.RawMessage) string {
	return digestOf(canonicalArgs(raw))
}

// Err returns nil if r.OK, else the Problems joined with errors.Join, one
// per line.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	errs := make([]error, len(r.Problems))
	for i, p := range r.Problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}
