package trust

import (
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
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// FloorDir is the directory, inside the store's, of the policy floors: one
// file per project, named by the SHA-256 (hex) of the project's root.
const FloorDir = "floors"

// Floor is a project's policy floor: the weakest approval policy a host
// puts in force for it, whatever mcpepoch.toml says. mcpepoch.toml is a
// file any process of the user can write, so an edit that weakens the
// policy (grants.proof naming same-user, a credential scope's proof
// dropped, allow_self_reload turned on, tools added to grants.exempt) is
// not applied until a person accepts it (mcpepoch policy accept, proven at
// the floor's own level). An edit that strengthens it applies at once and
// raises the floor. The first time a host sees a project, what its file
// says becomes the floor (trust on first use).
//
// File shape (floors/<sha256 of root>.json, 0600):
//
//	{"v": 1, "root": "/home/me/proj", "updatedAt": "2026-12-01T12:00:00Z", "updatedBy": "first_use",
//	 "proof": null, "exempt": ["read_*"], "allowSelfReload": false,
//	 "credentials": {"supplier": ["presence"]}}
type Floor struct {
	V         int       `json:"v"`
	Root      string    `json:"root"`
	UpdatedAt time.Time `json:"updatedAt"`
	// UpdatedBy says what last changed it: "first_use", "strengthened"
	// (an edit that strengthened the policy), or "accepted:LEVEL" (a
	// weakening a person accepted, proven at LEVEL).
	UpdatedBy string `json:"updatedBy"`
	// Proof is grants.proof; null is the default list (grant.DefaultProof).
	Proof           []string `json:"proof"`
	Exempt          []string `json:"exempt"`
	AllowSelfReload bool     `json:"allowSelfReload"`
	// Credentials holds credentials.NAME.proof for each scope that set one.
	Credentials map[string][]string `json:"credentials,omitempty"`
}

// Weakening is one setting of mcpepoch.toml that would weaken the floor:
// Setting is its key ("grants.proof", "grants.exempt",
// "allow_self_reload", "credentials.NAME.proof"), File what the file says
// and Floor what is in force instead, both as TOML values.
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
	f := Floor{V: 1, Root: root}
	if cfg == nil {
		return f
	}
	f.Proof = slices.Clone(cfg.Grants.Proof)
	f.Exempt = slices.Clone(cfg.Grants.Exempt)
	f.AllowSelfReload = cfg.AllowSelfReload
	for name, c := range cfg.Credentials {
		if c.Proof != nil {
			if f.Credentials == nil {
				f.Credentials = map[string][]string{}
			}
			f.Credentials[name] = slices.Clone(c.Proof)
		}
	}
	return f
}

// Reconcile compares cfg (nil: no file) with the floor f. It returns the
// config to put in force (a copy of cfg where each weakening setting has
// the floor's value), the floor raised by every setting that strengthens
// it, and the weakenings that were not applied, sorted by setting.
// enrolled picks the default proof list (grant.DefaultProof) where a list
// is unset.
func (f Floor) Reconcile(cfg *config.Config, enrolled bool) (*config.Config, Floor, []Weakening) {
	eff := &config.Config{}
	if cfg != nil {
		c := *cfg
		eff = &c
	}
	eff.Grants.Exempt = slices.Clone(eff.Grants.Exempt)
	eff.Credentials = maps.Clone(eff.Credentials)
	next := f
	next.Credentials = maps.Clone(f.Credentials)
	var weak []Weakening
	if admitsMore(eff.Grants.Proof, f.Proof, enrolled) {
		weak = append(weak, Weakening{"grants.proof", proofText(eff.Grants.Proof), proofText(f.Proof)})
		eff.Grants.Proof = slices.Clone(f.Proof)
	} else {
		next.Proof = slices.Clone(eff.Grants.Proof)
	}
	if kept, added := exemptDiff(eff.Grants.Exempt, f.Exempt); added {
		weak = append(weak, Weakening{"grants.exempt", listText(eff.Grants.Exempt), listText(kept)})
		eff.Grants.Exempt, next.Exempt = kept, slices.Clone(kept)
	} else {
		next.Exempt = slices.Clone(eff.Grants.Exempt)
	}
	if eff.AllowSelfReload && !f.AllowSelfReload {
		weak = append(weak, Weakening{"allow_self_reload", "true", "false"})
		eff.AllowSelfReload = false
	}
	next.AllowSelfReload = eff.AllowSelfReload
	for name, fp := range f.Credentials {
		c, ok := eff.Credentials[name]
		if !ok {
			continue // a scope the file no longer has: its floor stays for its return
		}
		if c.Proof == nil || admitsMore(c.Proof, fp, enrolled) {
			weak = append(weak, Weakening{"credentials." + name + ".proof", proofText(c.Proof), proofText(fp)})
			c.Proof = slices.Clone(fp)
			eff.Credentials[name] = c
		}
	}
	for name, c := range eff.Credentials {
		if c.Proof != nil {
			if next.Credentials == nil {
				next.Credentials = map[string][]string{}
			}
			next.Credentials[name] = slices.Clone(c.Proof)
		}
	}
	slices.SortFunc(weak, func(a, b Weakening) int { return strings.Compare(a.Setting, b.Setting) })
	return eff, next, weak
}

// exemptDiff compares the exempt patterns of a file with a floor's. added
// reports a pattern of the file that the floor does not exempt: not one
// of its patterns, nor a name one of them matches. kept is what stays
// exempt then: each pattern of the floor the file still exempts (the same
// pattern, or a name a pattern of the file matches).
func exemptDiff(file, floor []string) (kept []string, added bool) {
	covered := func(p string, by []string) bool {
		for _, b := range by {
			if b == p {
				return true
			}
			if ok, err := doublestar.Match(b, p); err == nil && ok {
				return true
			}
		}
		return false
	}
	for _, p := range file {
		if !covered(p, floor) {
			added = true
		}
	}
	kept = []string{}
	for _, p := range floor {
		if covered(p, file) {
			kept = append(kept, p)
		}
	}
	return kept, added
}

// Same reports whether f and g hold the same policy (times and who
// updated them left out).
func (f Floor) Same(g Floor) bool {
	eq := func(a, b []string) bool { return slices.Equal(a, b) && (a == nil) == (b == nil) }
	return eq(f.Proof, g.Proof) && slices.Equal(f.Exempt, g.Exempt) && f.AllowSelfReload == g.AllowSelfReload &&
		maps.EqualFunc(f.Credentials, g.Credentials, eq)
}

// admitsMore reports whether proof list got (nil: the default) counts an
// approval level that floor (nil: the default) does not count.
func admitsMore(got, floor []string, enrolled bool) bool {
	g, f := resolve(got, enrolled), resolve(floor, enrolled)
	for _, l := range []grant.Proof{grant.ProofPresence, grant.ProofTerminal, grant.ProofClient, grant.ProofSameUser} {
		if g.Counts(l) && !f.Counts(l) {
			return true
		}
	}
	return false
}

func resolve(list []string, enrolled bool) grant.Proofs {
	if list == nil {
		return grant.DefaultProof(enrolled)
	}
	out := make(grant.Proofs, len(list))
	for i, s := range list {
		out[i] = grant.Proof(s)
	}
	return out
}

func proofText(l []string) string {
	if l == nil {
		return "(default)"
	}
	return listText(l)
}

func listText(l []string) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

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
	case f.V != 1:
		return nil, &CorruptError{Path: path, Err: fmt.Errorf(`member "v" is %d, want 1`, f.V)}
	case f.Root != root:
		return nil, &CorruptError{Path: path, Err: fmt.Errorf(`member "root" is %q, want %q`, f.Root, root)}
	}
	return &f, nil
}

// SaveFloor writes f as the floor of the project f.Root in the store
// directory dir, atomically (0600, directories created 0700), stamped with
// now and by.
func SaveFloor(dir string, f Floor, by string, now time.Time) error {
	path := FloorPath(dir, f.Root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("policy floor: %w", err)
	}
	if err := CheckPath(path); err != nil {
		return err
	}
	f.V, f.UpdatedAt, f.UpdatedBy = 1, now.UTC(), by
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}
