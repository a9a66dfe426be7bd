// Package grant holds what a human approved — for which agent run, which
// execution epoch, which tools, which credential scopes, until when — and
// decides whether a tool call is covered (seed: "authorization follows the
// execution epoch").
//
// A grant names the epoch it was given for. When the host replaces its
// server, every grant of the old epoch is revoked (reason epoch_changed),
// even if the new process runs identical bytes: a new process is a new
// epoch. A call whose only grants were revoked that way is refused as
// authorization_stale; a call with no grant at all as
// authorization_required. Annotations (readOnlyHint …) never take part.
//
// The approval rules are this package's alone (rules.go): what a call
// needs and whether a grant covers it ([Policy.Need], [Store.Check]), what
// an approval grants ([Policy.Scope]) and what a review covers
// ([Policy.Review]). The host applies them; a channel that asks a person
// (the terminal's mcpepoch approve) only collects the decision.
//
// The host is the only writer of a Store: one JSON file per agent run,
// .mcpepoch/grants/<run>.json, mode 0600, written atomically. Grants hold
// credential scope names, never secrets.
package grant

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// Values of Grant.ExpiresWhen other than a duration.
const (
	ExpiresRunEnds = "agent-run-ends" // until the client disconnects
	ExpiresPerCall = "per-call"       // one call, then used up
)

// Reasons a grant is revoked.
const (
	RevokedEpochChanged = "epoch_changed" // the server was replaced
	RevokedByUser       = "revoked"       // mcpepoch revoke
	RevokedPolicyRaised = "policy_raised" // a stricter policy no longer counts how it was approved (Policy.Outranks)
	RevokedUsed         = "used"          // a per-call grant served its call
	RevokedExpired      = "expired"       // its duration ran out
	RevokedRunEnded     = "run_ended"     // the agent run ended
	// RevokedIdentityDrift: what the epoch's identity names changed on
	// disk while it ran, and no build restarted it (the host's drift check).
	RevokedIdentityDrift = "identity_drift"
)

// Grant is one approval. JSON field names follow the seed's example.
type Grant struct {
	ID              epoch.GrantID `json:"id"`
	AgentRun        epoch.RunID   `json:"agentRun"`
	ServerLabel     string        `json:"serverLabel"`
	ExecutionEpoch  epoch.Epoch   `json:"executionEpoch"`
	ToolScope       []string      `json:"toolScope"`
	CredentialScope []string      `json:"credentialScope"`
	IssuedAt        time.Time     `json:"issuedAt"`
	// ExpiresWhen is "agent-run-ends", "per-call" or a Go duration ("30m")
	// counted from IssuedAt.
	ExpiresWhen string `json:"expiresWhen"`
	// ExpiresAt is IssuedAt plus the duration, for a duration ExpiresWhen.
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	ApprovedBy string     `json:"approvedBy"` // OS user who approved, at the approving terminal
	// CatalogRevision is the catalog the person reviewed, so a stale grant
	// can also say whether the catalog changed.
	CatalogRevision string `json:"catalogRevision,omitempty"`
	// Definitions maps each tool of ToolScope to the digest of its
	// definition (the tools/list entry, RFC 8785) the person reviewed: a
	// tool the server redefines within the epoch is no longer covered (see
	// Grant.Reviewed). Nil in grants written before definitions were
	// recorded.
	Definitions map[string]string `json:"toolDefinitions,omitempty"`
	// Proof is how the person was proven (approval.ProofPresence …); empty in
	// grants written before proof levels were recorded.
	Proof approval.Proof `json:"proof,omitempty"`
	// Channel is where the approval was collected: "terminal" (mcpepoch
	// approve asked), "script" (mcpepoch approve --yes), "web" (the
	// approval page), "ssh" (mcpepoch approve --ssh).
	Channel string `json:"channel,omitempty"`
	// Authenticator, SignCount and SignedDigest describe a presence
	// signature: the enrolled authenticator's id (package trust), the
	// signature counter it reported and the grant digest it signed
	// ("sha256:…", a Proposal's Digest).
	Authenticator string     `json:"authenticator,omitempty"`
	SignCount     uint32     `json:"signCount,omitempty"`
	SignedDigest  string     `json:"signedDigest,omitempty"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
	RevokedReason string     `json:"revokedReason,omitempty"`
}

// ParseExpiry checks an ExpiresWhen value.
func ParseExpiry(s string) error {
	switch s {
	case ExpiresRunEnds, ExpiresPerCall:
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("expiry %q: want %s, %s or a positive duration such as 30m", s, ExpiresRunEnds, ExpiresPerCall)
	}
	return nil
}

// Live reports whether g is neither revoked nor past its duration at now.
func (g *Grant) Live(now time.Time) bool {
	if g.RevokedAt != nil {
		return false
	}
	if d, err := time.ParseDuration(g.ExpiresWhen); err == nil && now.After(g.IssuedAt.Add(d)) {
		return false
	}
	return true
}

// SetExpiry fills ExpiresAt from IssuedAt and a duration ExpiresWhen.
func (g *Grant) SetExpiry() {
	if d, err := time.ParseDuration(g.ExpiresWhen); err == nil {
		t := g.IssuedAt.Add(d)
		g.ExpiresAt = &t
	}
}

// Store is the grants of one agent run.
type Store struct {
	path   string
	Grants []*Grant
}

// fileFormat is the on-disk shape of a Store, version 1.
type fileFormat struct {
	V      int      `json:"v"`
	Grants []*Grant `json:"grants"`
}

// CorruptError reports a grants file that cannot be read; it is left as is.
// Err says what is wrong, naming the entry (grants[3]) and member at fault
// where there is one.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// MaxFileSize is the largest grants file Open reads, in bytes.
const MaxFileSize = 16 << 20

// Open reads the store at path, or returns an empty one if there is no file.
// A file that is not a version 1 store, or holds an entry that is not a
// grant (null, or without id, executionEpoch or toolScope), is a
// *CorruptError naming the file and the entry's index; so is a path that is
// not a regular file (a FIFO, a device, a symbolic link: only the host
// writes the store, by rename) or a file over MaxFileSize. Open never
// blocks on what path names.
func Open(path string) (*Store, error) {
	s := &Store{path: path}
	b, err := safefile.ReadFileNoFollow(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if r := safefile.Refusal(err); r != nil {
		return nil, &CorruptError{Path: path, Err: r}
	}
	if err != nil {
		return nil, err
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if f.V != 1 {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("v %d, want 1", f.V)}
	}
	for i, g := range f.Grants {
		if err := g.check(); err != nil {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("grants[%d]: %v", i, err)}
		}
	}
	s.Grants = f.Grants
	return s, nil
}

// check reports what makes g, an entry read from a file, not a grant.
func (g *Grant) check() error {
	switch {
	case g == nil:
		return errors.New("null, want a grant object")
	case g.ID == "":
		return errors.New(`member "id" missing or empty`)
	case g.ExecutionEpoch == "":
		return errors.New(`member "executionEpoch" missing or empty`)
	case len(g.ToolScope) == 0:
		return errors.New(`member "toolScope" missing or empty`)
	}
	return nil
}

// ReadAll reads every store in dir (one per agent run), keyed by file path.
// A corrupt file does not stop it: it returns the stores it could read
// and an error joining (errors.Join) a *CorruptError for each corrupt file,
// in file name order. Any other error ends it with a nil map.
func ReadAll(dir string) (map[string]*Store, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]*Store{}
	var corrupt []error
	for _, n := range names {
		s, err := Open(n)
		var ce *CorruptError
		if errors.As(err, &ce) {
			corrupt = append(corrupt, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, errors.Join(corrupt...)
}

// Save writes the store atomically, mode 0600, creating its directory (0700).
func (s *Store) Save() error {
	b, err := json.MarshalIndent(fileFormat{V: 1, Grants: s.Grants}, "", "  ")
	if err != nil {
		return err
	}
	if err := layout.MkdirAll(filepath.Dir(s.path)); err != nil {
		return err
	}
	return atomicfile.Write(s.path, append(b, '\n'), 0o600)
}

// Add appends g.
func (s *Store) Add(g *Grant) { s.Grants = append(s.Grants, g) }

// Revoke ends the live grant with id; it reports whether there was one.
func (s *Store) Revoke(id epoch.GrantID, reason string, now time.Time) bool {
	for _, g := range s.Grants {
		if g.ID == id && g.RevokedAt == nil {
			g.RevokedAt, g.RevokedReason = &now, reason
			return true
		}
	}
	return false
}

// RevokeEpochFor ends every live grant bound to ep, recording reason (one
// of the Revoked* constants) and now, and returns how many it ended.
func (s *Store) RevokeEpochFor(ep epoch.Epoch, reason string, now time.Time) int {
	n := 0
	for _, g := range s.Grants {
		if g.ExecutionEpoch == ep && g.RevokedAt == nil {
			g.RevokedAt, g.RevokedReason = &now, reason
			n++
		}
	}
	return n
}

// RevokeAll ends every live grant with reason.
func (s *Store) RevokeAll(reason string, now time.Time) int {
	n := 0
	for _, g := range s.Grants {
		if g.RevokedAt == nil {
			g.RevokedAt, g.RevokedReason = &now, reason
			n++
		}
	}
	return n
}

// Live returns the grants live at now.
func (s *Store) Live(now time.Time) []*Grant {
	var out []*Grant
	for _, g := range s.Grants {
		if g.Live(now) {
			out = append(out, g)
		}
	}
	return out
}

// Use marks a per-call grant used; other grants are left alone.
func (s *Store) Use(g *Grant, now time.Time) {
	if g != nil && g.ExpiresWhen == ExpiresPerCall && g.RevokedAt == nil {
		g.RevokedAt, g.RevokedReason = &now, RevokedUsed
	}
}
