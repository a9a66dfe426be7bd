package trust

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
)

// The settings a floor holds, each with the order that says which of two
// values is stronger. Reconcile, Diff and Same walk these two tables and
// identityFields (flooridentity.go: what a launch's identity covers); a
// setting that decides approval joins the floor with one row here, a
// member of Floor (or CredentialFloor) and its value in FloorOf.
//
// Each order settles a file's value against the floor's: the value in
// force (the stronger of the two, or what of both is strongest together)
// and whether the file's value weakens the floor. What is in force then
// becomes the floor: a file never lowers it, and what it strengthens
// raises it.
var grantsFields = []floorSetting{
	field[[]string]{key: "grants.proof", order: proofOrder{},
		file: func(c *config.Config) *[]string { return &c.Grants.Proof }, floor: func(f *Floor) *[]string { return &f.Proof }},
	field[[]string]{key: "grants.exempt", order: exemptOrder{},
		file: func(c *config.Config) *[]string { return &c.Grants.Exempt }, floor: func(f *Floor) *[]string { return &f.Exempt }},
	field[bool]{key: "allow_self_reload", order: flagOrder{stronger: false},
		file: func(c *config.Config) *bool { return &c.AllowSelfReload }, floor: func(f *Floor) *bool { return &f.AllowSelfReload }},
	field[string]{key: "grants.attestation", order: rankOrder{values: []string{config.AttestationRequired, config.AttestationOptional}, unset: 1},
		file: func(c *config.Config) *string { return &c.Grants.Attestation }, floor: func(f *Floor) *string { return &f.Attestation }},
}

// credentialFields are the settings of each [credentials.NAME] scope that
// decide approval or where the secret may be seen (deliver: "env" leaves
// it in the server's environment for the process's life). Its source is
// not: it is read once at start and never weakens who may approve.
var credentialFields = []credentialSetting{
	credField[[]string]{key: "tools", order: usesOrder{},
		file: func(c *config.Credential) *[]string { return &c.Tools }, floor: func(f *CredentialFloor) *[]string { return &f.Tools }},
	credField[bool]{key: "per_call", order: flagOrder{stronger: true},
		file: func(c *config.Credential) *bool { return &c.PerCall }, floor: func(f *CredentialFloor) *bool { return &f.PerCall }},
	credField[[]string]{key: "proof", order: scopeProofOrder{},
		file: func(c *config.Credential) *[]string { return &c.Proof }, floor: func(f *CredentialFloor) *[]string { return &f.Proof }},
	credField[string]{key: "deliver", order: deliverOrder{},
		file: func(c *config.Credential) *string { return &c.Deliver }, floor: func(f *CredentialFloor) *string { return &f.Deliver }},
}

// order settles a file's value of one setting against the floor's.
// enrolled picks the default proof list where a list is unset.
type order[T any] interface {
	settle(file, floor T, enrolled bool) (inForce T, weakens bool)
	equal(a, b T) bool
	// text prints v as TOML; enrolled names the default an unset value
	// stands for, where it depends on it.
	text(v T, enrolled bool) string
}

// Difference is one setting where mcpepoch.toml and the floor disagree:
// Setting is its key ("grants.proof", "credentials.NAME.tools"), Floor and
// File the two values as TOML, InForce what a host puts in force, and
// Weakens whether the file's value is weaker than the floor's (a host
// does not apply it until a person accepts it); otherwise it is stronger
// and a host applies it at once.
type Difference struct {
	Setting string `json:"setting"`
	Floor   string `json:"floor"`
	File    string `json:"file"`
	InForce string `json:"inForce"`
	Weakens bool   `json:"weakens"`
}

// floorSetting is a row of grantsFields.
type floorSetting interface {
	reconcile(eff *config.Config, f, next *Floor, enrolled bool) (Difference, bool)
	same(f, g *Floor) bool
}

// credentialSetting is a row of credentialFields.
type credentialSetting interface {
	reconcile(name string, eff *config.Credential, f, next *CredentialFloor, enrolled bool) (Difference, bool)
	same(f, g *CredentialFloor) bool
}

type field[T any] struct {
	key   string
	order order[T]
	file  func(*config.Config) *T
	floor func(*Floor) *T
}

func (s field[T]) reconcile(eff *config.Config, f, next *Floor, enrolled bool) (Difference, bool) {
	return settle(s.key, s.order, s.file(eff), *s.floor(f), s.floor(next), enrolled)
}

func (s field[T]) same(f, g *Floor) bool { return s.order.equal(*s.floor(f), *s.floor(g)) }

type credField[T any] struct {
	key   string
	order order[T]
	file  func(*config.Credential) *T
	floor func(*CredentialFloor) *T
}

func (s credField[T]) reconcile(name string, eff *config.Credential, f, next *CredentialFloor, enrolled bool) (Difference, bool) {
	return settle("credentials."+name+"."+s.key, s.order, s.file(eff), *s.floor(f), s.floor(next), enrolled)
}

func (s credField[T]) same(f, g *CredentialFloor) bool {
	return s.order.equal(*s.floor(f), *s.floor(g))
}

// settle puts in *eff and *next the value in force for key and returns
// how the file and the floor differ, if they do.
func settle[T any](key string, o order[T], eff *T, floor T, next *T, enrolled bool) (Difference, bool) {
	file := *eff
	in, weak := o.settle(file, floor, enrolled)
	*eff, *next = in, in
	if o.equal(file, floor) {
		return Difference{}, false
	}
	return Difference{Setting: key, Floor: o.text(floor, enrolled), File: o.text(file, enrolled), InForce: o.text(in, enrolled), Weakens: weak}, true
}

// walk settles every setting of cfg (nil: no file) against f. It returns
// the config to put in force, the floor raised by what strengthens it, and
// every setting where the two differ, sorted by key.
func (f Floor) walk(cfg *config.Config, enrolled bool) (*config.Config, Floor, []Difference) {
	eff := &config.Config{}
	if cfg != nil {
		c := *cfg
		eff = &c
	}
	eff.Grants.Exempt = slices.Clone(eff.Grants.Exempt)
	eff.Credentials = maps.Clone(eff.Credentials)
	next := f
	next.Credentials = nil
	var diff []Difference
	for _, s := range grantsFields {
		if d, ok := s.reconcile(eff, &f, &next, enrolled); ok {
			diff = append(diff, d)
		}
	}
	names := slices.Sorted(maps.Keys(f.Credentials))
	for name := range eff.Credentials {
		if _, ok := f.Credentials[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		// A scope the file dropped keeps the floor's approval settings, with
		// no source: its tools still need a grant that names it.
		c, fc, nc := eff.Credentials[name], f.Credentials[name], CredentialFloor{}
		c.Deliver = c.Delivery() // unset is broker: compared as such
		for _, s := range credentialFields {
			if d, ok := s.reconcile(name, &c, &fc, &nc, enrolled); ok {
				diff = append(diff, d)
			}
		}
		if eff.Credentials == nil {
			eff.Credentials = map[string]config.Credential{}
		}
		eff.Credentials[name] = c
		if next.Credentials == nil {
			next.Credentials = map[string]CredentialFloor{}
		}
		next.Credentials[name] = nc
	}
	var idDiff []Difference
	next.Identity, idDiff = f.walkIdentity(eff)
	diff = append(diff, idDiff...)
	slices.SortFunc(diff, func(a, b Difference) int { return strings.Compare(a.Setting, b.Setting) })
	return eff, next, diff
}

// Same reports whether f and g hold the same policy (times and who
// updated them left out).
func (f Floor) Same(g Floor) bool {
	for _, s := range grantsFields {
		if !s.same(&f, &g) {
			return false
		}
	}
	return maps.EqualFunc(f.Credentials, g.Credentials, func(a, b CredentialFloor) bool {
		for _, s := range credentialFields {
			if !s.same(&a, &b) {
				return false
			}
		}
		return true
	}) && len(f.Credentials) == len(g.Credentials) && sameIdentity(f.Identity, g.Identity)
}

// proofOrder orders grants.proof: a list is weaker when it counts a level
// the other does not; unset is approval.DefaultProof.
type proofOrder struct{}

func (proofOrder) settle(file, floor []string, enrolled bool) ([]string, bool) {
	if admitsMore(file, floor, enrolled) {
		return slices.Clone(floor), true
	}
	return slices.Clone(file), false
}

func (proofOrder) equal(a, b []string) bool { return slices.Equal(a, b) && (a == nil) == (b == nil) }
func (proofOrder) text(v []string, enrolled bool) string {
	if v == nil {
		return approval.DefaultProofText(enrolled)
	}
	return listText(v)
}

// scopeProofOrder orders credentials.NAME.proof: unset (only grants.proof
// applies) is the weakest; a list is weaker when it counts a level the
// other does not.
type scopeProofOrder struct{}

func (scopeProofOrder) settle(file, floor []string, enrolled bool) ([]string, bool) {
	if floor != nil && (file == nil || admitsMore(file, floor, enrolled)) {
		return slices.Clone(floor), true
	}
	return slices.Clone(file), false
}

func (scopeProofOrder) equal(a, b []string) bool { return proofOrder{}.equal(a, b) }
func (scopeProofOrder) text(v []string, _ bool) string {
	if v == nil {
		return "(none: grants.proof applies)"
	}
	return listText(v)
}

// exemptOrder orders grants.exempt (doublestar patterns): the file weakens
// the floor with a pattern the floor does not exempt, neither one of its
// patterns nor a name one of them matches. In force then: each pattern
// of the floor the file still exempts.
type exemptOrder struct{}

func (exemptOrder) settle(file, floor []string, _ bool) ([]string, bool) {
	added := false
	for _, p := range file {
		if !covered(p, floor) {
			added = true
		}
	}
	if !added {
		return slices.Clone(file), false
	}
	kept := []string{}
	for _, p := range floor {
		if covered(p, file) {
			kept = append(kept, p)
		}
	}
	return kept, true
}

func (exemptOrder) equal(a, b []string) bool       { return slices.Equal(a, b) }
func (exemptOrder) text(v []string, _ bool) string { return listText(v) }

// usesOrder orders credentials.NAME.tools (doublestar patterns): a tool
// that uses a scope needs a grant naming it, its proof list and, if it is
// per_call, a decision per call. The file weakens the floor when a pattern
// of the floor is no longer covered by one of the file's (the same
// pattern, or a name a pattern of the file matches): the patterns the file
// dropped stay in force beside the file's.
type usesOrder struct{}

func (usesOrder) settle(file, floor []string, _ bool) ([]string, bool) {
	in := slices.Clone(file)
	for _, p := range floor {
		if !covered(p, file) {
			in = append(in, p)
		}
	}
	return in, len(in) > len(file)
}

func (usesOrder) equal(a, b []string) bool       { return slices.Equal(a, b) }
func (usesOrder) text(v []string, _ bool) string { return listText(v) }

// flagOrder orders a boolean whose stronger value is stronger.
type flagOrder struct{ stronger bool }

func (o flagOrder) settle(file, floor bool, _ bool) (bool, bool) {
	if file != o.stronger && floor == o.stronger {
		return floor, true
	}
	return file, false
}

func (flagOrder) equal(a, b bool) bool       { return a == b }
func (flagOrder) text(v bool, _ bool) string { return strconv.FormatBool(v) }

// deliverOrder orders credentials.NAME.deliver: broker is stronger than
// env (a variable set at launch stays in the process, readable by any
// process of the user, until it exits). The file's value is never "" here
// (walk puts config.Credential.Delivery in its place). A floor's "" is a
// delivery not recorded: a floor written before deliver was one of its
// settings. Then the file's delivery is taken and becomes the floor's, as
// at a first use: such a floor neither holds an env delivery the file
// already had at broker (stricter by surprise) nor lets a weaker one in
// later (the value is recorded at the first read).
type deliverOrder struct{}

func (deliverOrder) rank(v string) int {
	switch v {
	case config.DeliverBroker:
		return 0
	case config.DeliverEnv:
		return 1
	}
	return 2 // unknown: the weakest
}

func (o deliverOrder) settle(file, floor string, _ bool) (string, bool) {
	if floor != "" && o.rank(file) > o.rank(floor) {
		return floor, true
	}
	return file, false
}

func (deliverOrder) equal(a, b string) bool { return a == b }
func (deliverOrder) text(v string, _ bool) string {
	if v == "" {
		return "(not recorded)"
	}
	return strconv.Quote(v)
}

// rankOrder orders a setting with a few values, strongest first; "" is
// the value at index unset.
type rankOrder struct {
	values []string
	unset  int
}

func (o rankOrder) rank(v string) int {
	if v == "" {
		return o.unset
	}
	if i := slices.Index(o.values, v); i >= 0 {
		return i
	}
	return len(o.values) // unknown: the weakest
}

func (o rankOrder) settle(file, floor string, _ bool) (string, bool) {
	if o.rank(file) > o.rank(floor) {
		return floor, true
	}
	return file, false
}

func (rankOrder) equal(a, b string) bool { return a == b }
func (o rankOrder) text(v string, _ bool) string {
	if v == "" {
		return "(default: " + strconv.Quote(o.values[o.unset]) + ")"
	}
	return strconv.Quote(v)
}

// covered reports whether pattern p is one of by, or a name one of by
// matches.
func covered(p string, by []string) bool {
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

// admitsMore reports whether proof list got (nil: the default) counts an
// approval level that floor (nil: the default) does not count.
func admitsMore(got, floor []string, enrolled bool) bool {
	g, f := resolve(got, enrolled), resolve(floor, enrolled)
	for _, l := range []approval.Proof{approval.ProofPresence, approval.ProofTerminal, approval.ProofClient, approval.ProofSameUser} {
		if g.Counts(l) && !f.Counts(l) {
			return true
		}
	}
	return false
}

func resolve(list []string, enrolled bool) approval.Proofs {
	if list == nil {
		return approval.DefaultProof(enrolled)
	}
	return approval.ParseProofs(list)
}

func listText(l []string) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
