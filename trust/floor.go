package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// FloorDir is the directory, inside the store's, of the policy floors: one
// file per project, named by the SHA-256 (hex) of the project's root.
const FloorDir = "floors"

// Floor is a project's policy floor: the weakest approval policy a host
// puts in force for it, whatever mcpepoch.toml says. mcpepoch.toml is a
// file any process of the user can write, so an edit that weakens the
// policy (grants.proof naming same-user, tools added to grants.exempt,
// allow_self_reload turned on, a credential scope's tools, per_call or
// proof loosened, its deliver switched from broker to env, the scope
// dropped, or what the identity hashes narrowed: code, deps or lockfiles
// set or an entry dropped, a data entry added, an env_files or env entry
// dropped) is not applied until a person accepts
// it (mcpepoch policy accept, proven at the floor's own level). An edit
// that strengthens it applies at once and raises the floor. The first time
// a host sees a project, what its file says becomes the floor (trust on
// first use). The settings and their order are the tables of
// floorfields.go.
//
// File shape (floors/<sha256 of root>.json, 0600; version 1 held only a
// proof list per scope, read as such):
//
//	{"v": 2, "root": "/home/me/proj", "updatedAt": "2026-12-01T12:00:00Z", "updatedBy": "first_use",
//	 "proof": null, "exempt": ["read_*"], "allowSelfReload": false,
//	 "credentials": {"supplier": {"tools": ["inventory_order"], "perCall": true, "proof": ["presence"], "deliver": "broker"}},
//	 "identity": {"code": null, "deps": null, "lockfiles": null, "data": [], "envFiles": [".env"], "env": []},
//	 "accepted": {…}}   (only when updatedBy is "accepted:LEVEL": see Acceptance)
type Floor struct {
	V         int       `json:"v"`
	Root      string    `json:"root"`
	UpdatedAt time.Time `json:"updatedAt"`
	// UpdatedBy says what last changed it: "first_use", "strengthened"
	// (an edit that strengthened the policy), or "accepted:LEVEL" (a
	// weakening a person accepted, proven at LEVEL).
	UpdatedBy string `json:"updatedBy"`
	// Proof is grants.proof; null is the default list (approval.DefaultProof).
	Proof           []string `json:"proof"`
	Exempt          []string `json:"exempt"`
	AllowSelfReload bool     `json:"allowSelfReload"`
	// Attestation is grants.attestation ("" when unset: optional).
	Attestation string `json:"attestation,omitempty"`
	// Credentials holds the approval settings of each credential scope.
	Credentials map[string]CredentialFloor `json:"credentials,omitempty"`
	// Identity holds the settings that decide what a launch's identity
	// covers (IdentityFloor); nil in a floor written before they were
	// recorded, when the file's are taken and recorded (walkIdentity).
	Identity *IdentityFloor `json:"identity,omitempty"`
	// Accepted is how a person accepted this floor in place of the one
	// before it, when UpdatedBy is "accepted:LEVEL" (flooraccept.go);
	// nil otherwise. A host checks it before it takes such a floor.
	Accepted *Acceptance `json:"accepted,omitempty"`
}

// CredentialFloor is the floor of one [credentials.NAME] scope: the tools
// that use it (credentials.NAME.tools), whether each call needs its own
// decision (per_call), its own proof list (proof; null: none) and how the
// server gets the secret (deliver: "broker" or "env"; absent in a floor
// written before it was recorded, when the file's delivery is taken and
// recorded, see deliverOrder).
type CredentialFloor struct {
	Tools   []string `json:"tools"`
	PerCall bool     `json:"perCall,omitempty"`
	Proof   []string `json:"proof"`
	Deliver string   `json:"deliver,omitempty"`
}

// UnmarshalJSON reads a scope's floor, or a version 1 floor's proof list
// (tools and per_call unknown then: the file's are taken).
func (c *CredentialFloor) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		*c = CredentialFloor{}
		return json.Unmarshal(b, &c.Proof)
	}
	type plain CredentialFloor
	return json.Unmarshal(b, (*plain)(c))
}

// Weakening is one setting of mcpepoch.toml that would weaken the floor:
// Setting is its key ("grants.proof", "grants.exempt",
// "allow_self_reload", "credentials.NAME.tools", "credentials.NAME.per_call",
// "credentials.NAME.proof", "credentials.NAME.deliver", and the identity
// settings "code", "deps", "lockfiles", "data", "env_files", "env"), File
// what the file says and Floor what is in force instead, both as TOML
// values.
type Weakening struct {
	Setting string `json:"setting"`
	File    string `json:"file"`
	Floor   string `json:"floor"`
}

func (w Weakening) String() string {
	return fmt.Sprintf("%s = %s (in force: %s)", w.Setting, w.File, w.Floor)
}

// FloorOf returns the floor cfg sets for the project at root (cfg nil: no
// mcpepoch.toml, the defaults).
func FloorOf(root string, cfg *config.Config) Floor {
	f := Floor{V: floorVersion, Root: root}
	if cfg == nil {
		return f
	}
	f.Proof = slices.Clone(cfg.Grants.Proof)
	f.Exempt = slices.Clone(cfg.Grants.Exempt)
	f.AllowSelfReload = cfg.AllowSelfReload
	f.Attestation = cfg.Grants.Attestation
	for name, c := range cfg.Credentials {
		if f.Credentials == nil {
			f.Credentials = map[string]CredentialFloor{}
		}
		f.Credentials[name] = CredentialFloor{Tools: slices.Clone(c.Tools), PerCall: c.PerCall, Proof: slices.Clone(c.Proof), Deliver: c.Delivery()}
	}
	id := identityOf(cfg)
	f.Identity = &id
	return f
}

// Reconcile compares cfg (nil: no file) with the floor f. It returns the
// config to put in force (a copy of cfg where each weakening setting has
// the floor's value), the floor raised by every setting that strengthens
// it, and the weakenings that were not applied, sorted by setting.
// enrolled picks the default proof list (approval.DefaultProof) where a list
// is unset.
func (f Floor) Reconcile(cfg *config.Config, enrolled bool) (*config.Config, Floor, []Weakening) {
	eff, next, diff := f.walk(cfg, enrolled)
	var weak []Weakening
	for _, d := range diff {
		if d.Weakens {
			weak = append(weak, Weakening{Setting: d.Setting, File: d.File, Floor: d.InForce})
		}
	}
	return eff, next, weak
}

// Diff returns every setting where cfg (nil: no file) and the floor f
// differ, weaker or stronger, sorted by setting: what mcpepoch policy
// shows and a person accepts.
func (f Floor) Diff(cfg *config.Config, enrolled bool) []Difference {
	_, _, diff := f.walk(cfg, enrolled)
	return diff
}

// floorVersion is the version SaveFloor writes; LoadFloor reads 1 too.
const floorVersion = 2

// FloorPath returns the floor file of the project at root in the store
// directory dir.
func FloorPath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, FloorDir, hex.EncodeToString(sum[:])+".json")
}

// LoadFloor reads the floor of the project at root from the store
// directory dir, after CheckPath. It returns nil and no error when the
// project has none yet (first use); a file that does not parse, or is
// another project's, is a *CorruptError, left as is.
func LoadFloor(dir, root string) (*Floor, error) {
	path := FloorPath(dir, root)
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(path, maxStoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f Floor
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	switch {
	case f.V != 1 && f.V != floorVersion:
		return nil, &CorruptError{Path: path, Err: fmt.Errorf(`member "v" is %d, want 1 or %d`, f.V, floorVersion)}
	case f.Root != root:
		return nil, &CorruptError{Path: path, Err: fmt.Errorf(`member "root" is %q, want %q`, f.Root, root)}
	}
	return &f, nil
}

// SaveFloor writes f as the floor of the project f.Root in the store
// directory dir, atomically (0600, directories created 0700), stamped with
// now and by (see WriteFloor).
func SaveFloor(dir string, f Floor, by string, now time.Time) error {
	return WriteFloor(dir, &f, by, now)
}

// WriteFloor is SaveFloor that leaves in *f the floor as written: stamped
// with now and by, and without an acceptance unless by is
// "accepted:LEVEL". What a host holds after writing is then what the file
// says, to the byte of its Digest.
func WriteFloor(dir string, f *Floor, by string, now time.Time) error {
	path := FloorPath(dir, f.Root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("policy floor: %w", err)
	}
	if err := CheckPath(path); err != nil {
		return err
	}
	f.V, f.UpdatedAt, f.UpdatedBy = floorVersion, now.UTC(), by
	if !strings.HasPrefix(by, AcceptedBy) {
		f.Accepted = nil
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// WeakerThan returns each setting where f is weaker than g (g taken as the
// floor and f as the file, as Reconcile names them), sorted by setting:
// what a floor file a host finds at start may not hold, against the last
// floor a host held, unless a person accepted it.
func (f Floor) WeakerThan(g Floor, enrolled bool) []Weakening {
	_, _, weak := g.Reconcile(f.asConfig(), enrolled)
	if f.Identity == nil && g.Identity != nil {
		// Not recorded takes whatever mcpepoch.toml says: the weakest.
		weak = append(weak, Weakening{Setting: "identity", File: "(not recorded)", Floor: "(recorded)"})
		slices.SortFunc(weak, func(a, b Weakening) int { return strings.Compare(a.Setting, b.Setting) })
	}
	return weak
}

// asConfig returns the approval settings of f as an mcpepoch.toml that
// sets exactly them (FloorOf undone).
func (f Floor) asConfig() *config.Config {
	cfg := &config.Config{AllowSelfReload: f.AllowSelfReload, Grants: config.Grants{
		Proof: slices.Clone(f.Proof), Exempt: slices.Clone(f.Exempt), Attestation: f.Attestation}}
	for name, c := range f.Credentials {
		if cfg.Credentials == nil {
			cfg.Credentials = map[string]config.Credential{}
		}
		cfg.Credentials[name] = config.Credential{Tools: slices.Clone(c.Tools), PerCall: c.PerCall, Proof: slices.Clone(c.Proof), Deliver: c.Deliver}
	}
	if f.Identity != nil {
		f.Identity.SetIn(cfg)
	}
	return cfg
}

// LockFloors takes the lock every writer of a floor file that read it
// first takes (a host raising a floor, policy accept): dir/floors.lock in
// the store directory dir, flock(2), waiting as long as it takes. Two
// writers then cannot both write in place of the same floor, so that the
// hosts of one project hold the floor the file says. It returns its
// release.
func LockFloors(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("policy floor: %w", err)
	}
	unlock, err := lock(filepath.Join(dir, "floors.lock"))
	if err != nil {
		return nil, fmt.Errorf("policy floor: lock: %w", err)
	}
	return unlock, nil
}

// AcceptanceProof is the proof list a person's acceptance of a change of
// f must be proven at: f's grants.proof (approval.DefaultProof(enrolled) when
// unset) made stricter by every credential scope's own proof list
// (approval.Stricter), since a change of the floor can weaken any of them: a
// scope that asks for presence cannot be weakened by a terminal answer
// under grants that count one.
func (f *Floor) AcceptanceProof(enrolled bool) approval.Proofs {
	out := approval.DefaultProof(enrolled)
	if f.Proof != nil {
		out = approval.ParseProofs(f.Proof)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Credentials)) {
		if c := f.Credentials[name]; c.Proof != nil {
			out = approval.Stricter(out, approval.ParseProofs(c.Proof))
		}
	}
	return out
}
