// Package epoch names execution epochs: one fresh ULID per launch of a
// server process, even when the code's digests did not change (seed:
// "replace the execution identity when the code changes"; a new process is
// a new epoch).
package epoch

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// Epoch is an execution epoch: a 26-character Crockford base32 ULID, sortable
// by launch time. It is distinct from a content digest (build.Digest) and
// from a catalog revision: the same bytes launched twice get two epochs.
type Epoch string

// New returns a fresh Epoch for a launch at t.
func New(t time.Time) Epoch {
	return Epoch(ulid.MustNew(ulid.Timestamp(t), rand.Reader).String())
}

// Parse checks that s is a ULID and returns it as an Epoch.
func Parse(s string) (Epoch, error) {
	if _, err := ulid.ParseStrict(s); err != nil {
		return "", fmt.Errorf("epoch %q: %v", s, err)
	}
	return Epoch(s), nil
}

// String returns e unchanged.
func (e Epoch) String() string { return string(e) }

// NewID returns a fresh ULID string for things that are not epochs but are
// named the same way: build ids and agent run ids.
func NewID(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}
