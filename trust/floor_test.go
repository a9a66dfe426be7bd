package trust

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
)

// Reconcile applies what strengthens the floor and holds what weakens it
// at the floor's value, for each of the four settings.
func TestFloorReconcile(t *testing.T) {
	base := &config.Config{
		Grants:      config.Grants{Exempt: []string{"read_*"}},
		Credentials: map[string]config.Credential{"prod": {Proof: []string{"presence"}}},
	}
	floor := FloorOf("/p", base)
	for _, tc := range []struct {
		name     string
		edit     func(c *config.Config)
		weak     []string // settings not applied
		proof    []string // in force
		exempt   []string // in force
		reload   bool     // in force
		credProo []string // credentials.prod.proof in force
	}{
		{name: "unchanged", edit: func(c *config.Config) {}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "proof same-user", edit: func(c *config.Config) { c.Grants.Proof = []string{"same-user"} },
			weak: []string{"grants.proof"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "proof presence is stricter", edit: func(c *config.Config) { c.Grants.Proof = []string{"presence"} },
			proof: []string{"presence"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "exempt gains a tool", edit: func(c *config.Config) { c.Grants.Exempt = []string{"read_*", "write"} },
			weak: []string{"grants.exempt"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "exempt narrowed by name", edit: func(c *config.Config) { c.Grants.Exempt = []string{"read_a"} },
			exempt: []string{"read_a"}, credProo: []string{"presence"}},
		{name: "exempt widened to a glob", edit: func(c *config.Config) { c.Grants.Exempt = []string{"*"} },
			weak: []string{"grants.exempt"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "self-reload on", edit: func(c *config.Config) { c.AllowSelfReload = true },
			weak: []string{"allow_self_reload"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "credential proof dropped", edit: func(c *config.Config) { c.Credentials = map[string]config.Credential{"prod": {}} },
			weak: []string{"credentials.prod.proof"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
		{name: "credential proof weakened", edit: func(c *config.Config) {
			c.Credentials = map[string]config.Credential{"prod": {Proof: []string{"terminal"}}}
		}, weak: []string{"credentials.prod.proof"}, exempt: []string{"read_*"}, credProo: []string{"presence"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *base
			c.Grants.Exempt = slices.Clone(base.Grants.Exempt)
			c.Credentials = map[string]config.Credential{"prod": base.Credentials["prod"]}
			tc.edit(&c)
			eff, next, weak := floor.Reconcile(&c, false)
			var got []string
			for _, w := range weak {
				got = append(got, w.Setting)
			}
			if !slices.Equal(got, tc.weak) {
				t.Errorf("weakenings %v, want %v", got, tc.weak)
			}
			if !slices.Equal(eff.Grants.Proof, tc.proof) || !slices.Equal(eff.Grants.Exempt, tc.exempt) ||
				eff.AllowSelfReload != tc.reload || !slices.Equal(eff.Credentials["prod"].Proof, tc.credProo) {
				t.Errorf("in force: proof %v exempt %v reload %v prod %v", eff.Grants.Proof, eff.Grants.Exempt, eff.AllowSelfReload, eff.Credentials["prod"].Proof)
			}
			if _, _, again := next.Reconcile(eff, false); len(again) != 0 {
				t.Errorf("what is in force weakens the raised floor %+v: %v", next, again)
			}
			if len(tc.weak) > 0 && !next.Same(floor) {
				t.Errorf("a weakening moved the floor: %+v", next)
			}
		})
	}
}

// A floor round-trips through its file; another project's file, or a
// corrupt one, is refused and kept.
func TestFloorFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcpepoch")
	if f, err := LoadFloor(dir, "/p"); f != nil || err != nil {
		t.Fatalf("first use: %v, %v", f, err)
	}
	f := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"presence"}}})
	if err := SaveFloor(dir, f, "first_use", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFloor(dir, "/p")
	if err != nil || !got.Same(f) || got.UpdatedBy != "first_use" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := os.Rename(FloorPath(dir, "/p"), FloorPath(dir, "/q")); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := LoadFloor(dir, "/q"); !errors.As(err, &ce) {
		t.Errorf("another project's floor: %v, want a CorruptError", err)
	}
	if err := os.WriteFile(FloorPath(dir, "/p"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFloor(dir, "/p"); !errors.As(err, &ce) {
		t.Errorf("corrupt floor: %v, want a CorruptError", err)
	}
}
