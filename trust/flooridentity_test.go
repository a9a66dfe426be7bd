package trust

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpepoch/mcpepoch/config"
)

// The settings that decide what the identity hashes are floor settings,
// ordered by how much they hash: a file that narrows what is hashed is
// held at the floor's value; one that widens it raises the floor.
func TestFloorIdentityOrders(t *testing.T) {
	for _, tc := range []struct {
		name        string
		floor, file config.Config
		weak        []string // settings not applied
		inForce     config.Config
		raised      bool
	}{
		{name: "code set over unset", file: config.Config{Code: []string{"nothing_here"}},
			weak: []string{"code"}},
		{name: "code empty over unset", file: config.Config{Code: []string{}},
			weak: []string{"code"}},
		{name: "code unset over a list", floor: config.Config{Code: []string{"lib"}},
			raised: true},
		{name: "code drops an entry", floor: config.Config{Code: []string{"lib", "dist"}}, file: config.Config{Code: []string{"lib"}},
			weak: []string{"code"}, inForce: config.Config{Code: []string{"lib", "dist"}}},
		{name: "code drops one, adds one", floor: config.Config{Code: []string{"lib", "dist"}}, file: config.Config{Code: []string{"lib", "src"}},
			weak: []string{"code"}, inForce: config.Config{Code: []string{"lib", "src", "dist"}}, raised: true},
		{name: "code adds an entry", floor: config.Config{Code: []string{"lib"}}, file: config.Config{Code: []string{"./lib/", "src"}},
			inForce: config.Config{Code: []string{"./lib/", "src"}}, raised: true},
		{name: "code spelt otherwise", floor: config.Config{Code: []string{"lib"}}, file: config.Config{Code: []string{"./lib"}},
			inForce: config.Config{Code: []string{"./lib"}}},
		{name: "code glob does not stand for a name", floor: config.Config{Code: []string{"lib/a.py"}}, file: config.Config{Code: []string{"lib/*.py"}},
			weak: []string{"code"}, inForce: config.Config{Code: []string{"lib/*.py", "lib/a.py"}}, raised: true},
		{name: "deps set over detected", file: config.Config{Deps: []string{"vendor"}},
			weak: []string{"deps"}},
		{name: "lockfiles drops one", floor: config.Config{Lockfiles: []string{"uv.lock", "requirements.txt"}}, file: config.Config{Lockfiles: []string{"uv.lock"}},
			weak: []string{"lockfiles"}, inForce: config.Config{Lockfiles: []string{"uv.lock", "requirements.txt"}}},
		{name: "data gains a file", file: config.Config{Data: []string{".env"}},
			weak: []string{"data"}, inForce: config.Config{Data: []string{}}},
		{name: "data gains one, keeps one", floor: config.Config{Data: []string{"state.db"}}, file: config.Config{Data: []string{"./state.db", "lib/**"}},
			weak: []string{"data"}, inForce: config.Config{Data: []string{"./state.db"}}},
		{name: "data drops a file", floor: config.Config{Data: []string{"state.db", "cache.db"}}, file: config.Config{Data: []string{"state.db"}},
			inForce: config.Config{Data: []string{"state.db"}}, raised: true},
		{name: "env_files drops one", floor: config.Config{EnvFiles: []string{".env", ".env.local"}}, file: config.Config{EnvFiles: []string{"./.env"}},
			weak: []string{"env_files"}, inForce: config.Config{EnvFiles: []string{"./.env", ".env.local"}}},
		{name: "env_files adds one", floor: config.Config{EnvFiles: []string{".env"}}, file: config.Config{EnvFiles: []string{".env", ".env.local"}},
			inForce: config.Config{EnvFiles: []string{".env", ".env.local"}}, raised: true},
		{name: "env dropped", floor: config.Config{Env: []string{"API_URL", "MODE"}},
			weak: []string{"env"}, inForce: config.Config{Env: []string{"API_URL", "MODE"}}},
		{name: "all narrowed", floor: config.Config{EnvFiles: []string{".env"}, Env: []string{"MODE"}},
			file:    config.Config{Code: []string{"x"}, Deps: []string{"x"}, Lockfiles: []string{"x"}, Data: []string{"x"}},
			weak:    []string{"code", "data", "deps", "env", "env_files", "lockfiles"},
			inForce: config.Config{Data: []string{}, EnvFiles: []string{".env"}, Env: []string{"MODE"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			floor := FloorOf("/p", &tc.floor)
			file := tc.file
			eff, next, weak := floor.Reconcile(&file, false)
			var got []string
			for _, w := range weak {
				got = append(got, w.Setting)
			}
			if !slices.Equal(got, tc.weak) {
				t.Errorf("weakenings %v, want %v", weak, tc.weak)
			}
			want := identityOf(&tc.inForce)
			if in := identityOf(eff); !identityEqual(in, want) {
				t.Errorf("in force %+v, want %+v", in, want)
			}
			if !identityEqual(*next.Identity, want) {
				t.Errorf("next floor %+v, want what is in force %+v", *next.Identity, want)
			}
			if raised := !next.Same(floor); raised != tc.raised {
				t.Errorf("floor raised %v, want %v (%+v → %+v)", raised, tc.raised, *floor.Identity, *next.Identity)
			}
			// What is in force never weakens the floor it came from.
			if _, _, w := next.Reconcile(eff, false); len(w) != 0 {
				t.Errorf("in force %+v weakens the raised floor: %v", identityOf(eff), w)
			}
			// Accepting the file (its floor in place of this one) is a
			// weakening exactly when the file weakens this floor.
			if w := FloorOf("/p", &file).WeakerThan(floor, false); len(w) != len(tc.weak) {
				t.Errorf("the file's floor against this one: weaker in %v, want %v", w, tc.weak)
			}
		})
	}
}

// identityEqual compares two identity settings exactly: nil (unset) is not
// an empty list where the order tells them apart.
func identityEqual(a, b IdentityFloor) bool {
	same := func(x, y []string, unset bool) bool {
		return slices.Equal(x, y) && (!unset || (x == nil) == (y == nil))
	}
	return same(a.Code, b.Code, true) && same(a.Deps, b.Deps, true) && same(a.Lockfiles, b.Lockfiles, true) &&
		same(a.Data, b.Data, false) && same(a.EnvFiles, b.EnvFiles, false) && same(a.Env, b.Env, false)
}

// A floor written before the identity settings were recorded takes the
// file's as they are then (trust on first use) and records them, so that
// a later narrowing is held; a floor file that lost them is weaker than
// one that has them.
func TestFloorIdentityNotRecorded(t *testing.T) {
	var old Floor
	if err := json.Unmarshal([]byte(`{"v": 2, "root": "/p", "proof": null, "exempt": []}`), &old); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Code: []string{"lib"}, Data: []string{"state.db"}}
	eff, next, weak := old.Reconcile(cfg, false)
	if len(weak) != 0 || !slices.Equal(eff.Code, []string{"lib"}) || !slices.Equal(eff.Data, []string{"state.db"}) {
		t.Errorf("file over a floor without identity: weak %v, in force code %v data %v", weak, eff.Code, eff.Data)
	}
	if next.Identity == nil || next.Same(old) || !slices.Equal(next.Identity.Code, []string{"lib"}) {
		t.Fatalf("the file's identity settings are not recorded: %+v", next.Identity)
	}
	narrowed := &config.Config{Code: []string{"nothing_here"}, Data: []string{"state.db", "lib/**"}}
	if _, _, weak := next.Reconcile(narrowed, false); len(weak) != 2 || weak[0].Setting != "code" || weak[1].Setting != "data" {
		t.Errorf("a narrowing after the first read: weak %v", weak)
	}
	if w := old.WeakerThan(next, false); len(w) != 1 || w[0].Setting != "identity" {
		t.Errorf("a floor without identity against one with it: weaker in %v", w)
	}
	if w := next.WeakerThan(old, false); len(w) != 0 {
		t.Errorf("a floor with identity against one without: weaker in %v", w)
	}
}

// Unset (null) and an empty list survive the floor file: for code they
// are the strongest and a narrow value.
func TestFloorIdentityJSON(t *testing.T) {
	f := FloorOf("/p", &config.Config{Code: []string{}, Data: []string{"a"}})
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var g Floor
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if !g.Same(f) || g.Identity.Code == nil || g.Identity.Deps != nil {
		t.Errorf("round trip of %s: %+v", b, g.Identity)
	}
}
