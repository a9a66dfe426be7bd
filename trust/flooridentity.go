package trust

import (
	"slices"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
)

// IdentityFloor is the floor of the settings of mcpepoch.toml that decide
// what a launch's identity covers (docs/hashing.md): code, deps and
// lockfiles (null: unset, what mcpepoch infers or detects), data, and
// env_files and env. An agent that can write mcpepoch.toml could else
// take its own code out of the identity (code = ["empty"], data naming an
// env file the command line reads), have a person approve the epoch that
// hashes nothing of it, then change that code under the grant with no
// drift seen. Their orders are identityFields'.
//
// JSON: {"code": null, "deps": ["node_modules"], "lockfiles": null,
// "data": ["state.db"], "envFiles": [".env"], "env": ["API_URL"]}.
type IdentityFloor struct {
	Code      []string `json:"code"`
	Deps      []string `json:"deps"`
	Lockfiles []string `json:"lockfiles"`
	Data      []string `json:"data"`
	EnvFiles  []string `json:"envFiles"`
	Env       []string `json:"env"`
}

// identityOf returns the identity settings cfg makes.
func identityOf(cfg *config.Config) IdentityFloor {
	return IdentityFloor{Code: slices.Clone(cfg.Code), Deps: slices.Clone(cfg.Deps), Lockfiles: slices.Clone(cfg.Lockfiles),
		Data: slices.Clone(cfg.Data), EnvFiles: slices.Clone(cfg.EnvFiles), Env: slices.Clone(cfg.Env)}
}

// SetIn puts the identity settings of i in cfg.
func (i IdentityFloor) SetIn(cfg *config.Config) {
	cfg.Code, cfg.Deps, cfg.Lockfiles = slices.Clone(i.Code), slices.Clone(i.Deps), slices.Clone(i.Lockfiles)
	cfg.Data, cfg.EnvFiles, cfg.Env = slices.Clone(i.Data), slices.Clone(i.EnvFiles), slices.Clone(i.Env)
}

// StrictestIdentity is the identity floor of a floor that cannot be read
// or went missing, for the file cfg: code, deps and lockfiles unset (what
// mcpepoch infers, the most it hashes), nothing taken out as data, and
// cfg's env_files and env (each order takes the union with the file's).
func StrictestIdentity(cfg *config.Config) *IdentityFloor {
	return &IdentityFloor{Data: []string{}, EnvFiles: slices.Clone(cfg.EnvFiles), Env: slices.Clone(cfg.Env)}
}

// identityFields are the settings of IdentityFloor, each with its order:
// more hashed is stronger. A host computes a launch's identity with the
// values in force, so that a weakening never narrows what it hashes
// before a person accepts it.
var identityFields = []identitySetting{
	idField{key: "code", order: scopeOrder{unset: "(unset: inferred from the launch)"},
		file: func(c *config.Config) *[]string { return &c.Code }, floor: func(f *IdentityFloor) *[]string { return &f.Code }},
	idField{key: "deps", order: scopeOrder{unset: "(unset: the dependency trees found)"},
		file: func(c *config.Config) *[]string { return &c.Deps }, floor: func(f *IdentityFloor) *[]string { return &f.Deps }},
	idField{key: "lockfiles", order: scopeOrder{unset: "(unset: the standard lockfiles found)"},
		file: func(c *config.Config) *[]string { return &c.Lockfiles }, floor: func(f *IdentityFloor) *[]string { return &f.Lockfiles }},
	idField{key: "data", order: dataOrder{},
		file: func(c *config.Config) *[]string { return &c.Data }, floor: func(f *IdentityFloor) *[]string { return &f.Data }},
	idField{key: "env_files", order: unionOrder{clean: cleanEntry},
		file: func(c *config.Config) *[]string { return &c.EnvFiles }, floor: func(f *IdentityFloor) *[]string { return &f.EnvFiles }},
	idField{key: "env", order: unionOrder{clean: func(s string) string { return s }},
		file: func(c *config.Config) *[]string { return &c.Env }, floor: func(f *IdentityFloor) *[]string { return &f.Env }},
}

// IdentitySettings are the keys of identityFields, the settings a host
// reads once, when it starts (a change reaches the identity of a new
// host only).
var IdentitySettings = []string{"code", "deps", "lockfiles", "data", "env_files", "env"}

// identitySetting is a row of identityFields.
type identitySetting interface {
	reconcile(eff *config.Config, f, next *IdentityFloor) (Difference, bool)
	same(f, g *IdentityFloor) bool
}

type idField struct {
	key   string
	order order[[]string]
	file  func(*config.Config) *[]string
	floor func(*IdentityFloor) *[]string
}

func (s idField) reconcile(eff *config.Config, f, next *IdentityFloor) (Difference, bool) {
	return settle(s.key, s.order, s.file(eff), *s.floor(f), s.floor(next), false)
}

func (s idField) same(f, g *IdentityFloor) bool { return s.order.equal(*s.floor(f), *s.floor(g)) }

// walkIdentity settles the identity settings of eff (changed in place)
// against f's, and returns the identity floor raised by what strengthens
// it and where the two differ. A floor written before these settings
// were recorded (f.Identity nil) takes the file's values as they are then
// and records them, as a first use (trust on first use).
func (f Floor) walkIdentity(eff *config.Config) (*IdentityFloor, []Difference) {
	held := identityOf(eff)
	if f.Identity != nil {
		held = *f.Identity
	}
	next := held
	var diff []Difference
	for _, s := range identityFields {
		if d, ok := s.reconcile(eff, &held, &next); ok {
			diff = append(diff, d)
		}
	}
	return &next, diff
}

// sameIdentity reports whether a and b hold the same identity settings
// (nil: not recorded).
func sameIdentity(a, b *IdentityFloor) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, s := range identityFields {
		if !s.same(a, b) {
			return false
		}
	}
	return true
}

// cleanEntry is a path or doublestar pattern of mcpepoch.toml as the
// orders compare it: slash-separated, cleaned, a leading "./" dropped.
// Two spellings of one file compare equal; a pattern is not expanded (a
// glob that covers a dropped name does not stand for it).
func cleanEntry(p string) string { return build.CleanPattern(p) }

// hasEntry reports whether list holds p, both cleaned by clean.
func hasEntry(list []string, p string, clean func(string) string) bool {
	c := clean(p)
	return slices.ContainsFunc(list, func(q string) bool { return clean(q) == c })
}

// sameEntries reports whether a and b hold the same entries, cleaned by
// clean, whatever their order and repeats.
func sameEntries(a, b []string, clean func(string) string) bool {
	for _, p := range a {
		if !hasEntry(b, p, clean) {
			return false
		}
	}
	for _, p := range b {
		if !hasEntry(a, p, clean) {
			return false
		}
	}
	return true
}

// union returns file with each entry of floor it lacks appended, and
// whether it lacked one.
func union(file, floor []string, clean func(string) string) ([]string, bool) {
	in := slices.Clone(file)
	for _, p := range floor {
		if !hasEntry(file, p, clean) && !hasEntry(in, p, clean) {
			in = append(in, p)
		}
	}
	return in, len(in) > len(file)
}

// scopeOrder orders code, deps and lockfiles, which replace what mcpepoch
// infers or detects when set: unset is the strongest (the inference
// covers what the project holds, whatever a list leaves out); a set list
// is weaker than unset; between two lists, the file weakens the floor
// when it drops an entry of the floor's (cleaned, cleanEntry) and raises
// it when it adds one. In force: unset when the floor is unset, else the
// union of both.
type scopeOrder struct{ unset string }

func (scopeOrder) settle(file, floor []string, _ bool) ([]string, bool) {
	switch {
	case floor == nil:
		return nil, file != nil
	case file == nil:
		return nil, false
	}
	return union(file, floor, cleanEntry)
}

func (scopeOrder) equal(a, b []string) bool {
	return (a == nil) == (b == nil) && sameEntries(a, b, cleanEntry)
}

func (o scopeOrder) text(v []string, _ bool) string {
	if v == nil {
		return o.unset
	}
	return listText(v)
}

// dataOrder orders data, the files taken out of the identity as the
// server's own data: none is the strongest; the file weakens the floor
// with an entry the floor does not have (cleaned, cleanEntry). In force:
// the entries both have.
type dataOrder struct{}

func (dataOrder) settle(file, floor []string, _ bool) ([]string, bool) {
	kept := []string{}
	for _, p := range file {
		if hasEntry(floor, p, cleanEntry) {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(file) {
		return slices.Clone(file), false
	}
	return kept, true
}

func (dataOrder) equal(a, b []string) bool       { return sameEntries(a, b, cleanEntry) }
func (dataOrder) text(v []string, _ bool) string { return listText(v) }

// unionOrder orders env_files and env, which only add inputs: more is
// stronger; the file weakens the floor when it drops an entry of the
// floor's (compared after clean). In force: the union of both.
type unionOrder struct{ clean func(string) string }

func (o unionOrder) settle(file, floor []string, _ bool) ([]string, bool) {
	return union(file, floor, o.clean)
}

func (o unionOrder) equal(a, b []string) bool     { return sameEntries(a, b, o.clean) }
func (unionOrder) text(v []string, _ bool) string { return listText(v) }
