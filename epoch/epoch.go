// Package epoch names execution epochs: one fresh ULID per launch of a
// server process, even when the code's digests did not change (seed:
// "replace the execution identity when the code changes"; a new process is
// a new epoch).
//
// Three other things are named the same way, by a ULID minted at the moment
// they begin, and each has its own type so that one is never passed for
// another: an agent run (RunID), a build recorded by the hook (BuildID) and
// a grant (GrantID). All four are plain strings on the wire (JSON, TOML,
// audit records): the types change no format.
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
	return Epoch(newULID(t))
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

// RunID names an agent run: one client's session with one host, from the
// client launching `mcpepoch host` until it disconnects. Grants, the host's
// socket and its execution record are keyed by it.
type RunID string

// BuildID names one build recorded by the hook (`mcpepoch record`): the
// run manifest's build.id, the build_complete and build_failed requests'
// "build", and the builds log.
type BuildID string

// GrantID names one grant (grant.Grant.ID), as listed by `mcpepoch grants`
// and ended by `mcpepoch revoke`.
type GrantID string

// NewRunID returns a fresh RunID for an agent run beginning at t.
func NewRunID(t time.Time) RunID { return RunID(newULID(t)) }

// NewBuildID returns a fresh BuildID for a build recorded at t.
func NewBuildID(t time.Time) BuildID { return BuildID(newULID(t)) }

// NewGrantID returns a fresh GrantID for a grant issued at t.
func NewGrantID(t time.Time) GrantID { return GrantID(newULID(t)) }

func (r RunID) String() string   { return string(r) }
func (b BuildID) String() string { return string(b) }
func (g GrantID) String() string { return string(g) }

func newULID(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}
