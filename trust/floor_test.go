package trust

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
)

// Reconcile applies what strengthens the floor and holds what weakens it
// at the floor's value, for each setting of the floor.
func TestFloorReconcile(t *testing.T) {
	base := &config.Config{
		Grants: config.Grants{Exempt: []string{"read_*"}},
		Credentials: map[string]config.Credential{
			"prod": {Tools: []string{"deploy_*", "rollback"}, PerCall: true, Proof: []string{"presence"}, Env: "PROD_TOKEN"},
		},
	}
	floor := FloorOf("/p", base)
	prod := func(tools []string, perCall bool, proof []string) config.Credential {
		return config.Credential{Tools: tools, PerCall: perCall, Proof: proof, Env: "PROD_TOKEN"}
	}
	held := base.Credentials["prod"]
	for _, tc := range []struct {
		name   string
		edit   func(c *config.Config)
		weak   []string // settings not applied
		proof  []string // in force
		exempt []string // in force
		reload bool     // in force
		prod   config.Credential
		raised bool // the floor moves up
	}{
		{name: "unchanged", edit: func(c *config.Config) {}, exempt: []string{"read_*"}, prod: held},
		{name: "proof same-user", edit: func(c *config.Config) { c.Grants.Proof = []string{"same-user"} },
			weak: []string{"grants.proof"}, exempt: []string{"read_*"}, prod: held},
		{name: "proof presence is stricter", edit: func(c *config.Config) { c.Grants.Proof = []string{"presence"} },
			proof: []string{"presence"}, exempt: []string{"read_*"}, prod: held, raised: true},
		{name: "exempt gains a tool", edit: func(c *config.Config) { c.Grants.Exempt = []string{"read_*", "write"} },
			weak: []string{"grants.exempt"}, exempt: []string{"read_*"}, prod: held},
		{name: "exempt narrowed by name", edit: func(c *config.Config) { c.Grants.Exempt = []string{"read_a"} },
			exempt: []string{"read_a"}, prod: held, raised: true},
		{name: "exempt widened to a glob", edit: func(c *config.Config) { c.Grants.Exempt = []string{"*"} },
			weak: []string{"grants.exempt"}, exempt: []string{"read_*"}, prod: held},
		{name: "self-reload on", edit: func(c *config.Config) { c.AllowSelfReload = true },
			weak: []string{"allow_self_reload"}, exempt: []string{"read_*"}, prod: held},
		{name: "credential proof dropped", edit: func(c *config.Config) { c.Credentials["prod"] = prod(held.Tools, true, nil) },
			weak: []string{"credentials.prod.proof"}, exempt: []string{"read_*"}, prod: held},
		{name: "credential proof weakened", edit: func(c *config.Config) { c.Credentials["prod"] = prod(held.Tools, true, []string{"terminal"}) },
			weak: []string{"credentials.prod.proof"}, exempt: []string{"read_*"}, prod: held},
		{name: "per_call dropped", edit: func(c *config.Config) { c.Credentials["prod"] = prod(held.Tools, false, held.Proof) },
			weak: []string{"credentials.prod.per_call"}, exempt: []string{"read_*"}, prod: held},
		{name: "tool dropped from tools", edit: func(c *config.Config) { c.Credentials["prod"] = prod([]string{"deploy_*"}, true, held.Proof) },
			weak: []string{"credentials.prod.tools"}, exempt: []string{"read_*"}, prod: prod([]string{"deploy_*", "rollback"}, true, held.Proof)},
		{name: "tools glob narrowed to a name", edit: func(c *config.Config) {
			c.Credentials["prod"] = prod([]string{"deploy_web", "rollback"}, true, held.Proof)
		},
			weak: []string{"credentials.prod.tools"}, exempt: []string{"read_*"}, prod: prod([]string{"deploy_web", "rollback", "deploy_*"}, true, held.Proof),
			raised: true}, // the name joins the floor's list, which still covers deploy_*
		{name: "tools widened", edit: func(c *config.Config) { c.Credentials["prod"] = prod([]string{"*"}, true, held.Proof) },
			exempt: []string{"read_*"}, prod: prod([]string{"*"}, true, held.Proof), raised: true},
		{name: "scope dropped", edit: func(c *config.Config) { delete(c.Credentials, "prod") },
			weak: []string{"credentials.prod.per_call", "credentials.prod.proof", "credentials.prod.tools"}, exempt: []string{"read_*"},
			prod: config.Credential{Tools: held.Tools, PerCall: true, Proof: held.Proof}},
		{name: "scope added", edit: func(c *config.Config) { c.Credentials["ops"] = config.Credential{Tools: []string{"page"}} },
			exempt: []string{"read_*"}, prod: held, raised: true},
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
			p := eff.Credentials["prod"]
			if !slices.Equal(eff.Grants.Proof, tc.proof) || !slices.Equal(eff.Grants.Exempt, tc.exempt) ||
				eff.AllowSelfReload != tc.reload || !slices.Equal(p.Tools, tc.prod.Tools) || p.PerCall != tc.prod.PerCall ||
				!slices.Equal(p.Proof, tc.prod.Proof) || p.Env != tc.prod.Env {
				t.Errorf("in force: proof %v exempt %v reload %v prod %+v", eff.Grants.Proof, eff.Grants.Exempt, eff.AllowSelfReload, p)
			}
			if _, _, again := next.Reconcile(eff, false); len(again) != 0 {
				t.Errorf("what is in force weakens the raised floor %+v: %v", next, again)
			}
			if next.Same(floor) == tc.raised {
				t.Errorf("floor raised %v, want %v: %+v", !next.Same(floor), tc.raised, next)
			}
			if d := floor.Diff(&c, false); len(d) < len(tc.weak) || (len(d) == 0) != (tc.name == "unchanged") {
				t.Errorf("Diff %+v", d)
			}
		})
	}
}

// A setting with a few values, strongest first, never moves down: a file
// naming a weaker one (or an unknown one) is held at the floor's.
func TestFloorRankOrder(t *testing.T) {
	o := rankOrder{values: []string{"required", "optional"}, unset: 1}
	for _, tc := range []struct {
		file, floor, in string
		weak            bool
	}{
		{"", "", "", false},
		{"required", "", "required", false},
		{"optional", "required", "required", true},
		{"", "required", "required", true},
		{"bogus", "optional", "optional", true},
		{"optional", "", "optional", false},
	} {
		if in, weak := o.settle(tc.file, tc.floor, false); in != tc.in || weak != tc.weak {
			t.Errorf("file %q floor %q: in force %q weakens %v, want %q %v", tc.file, tc.floor, in, weak, tc.in, tc.weak)
		}
	}
}

// A version 1 floor, which held only a proof list per scope, is read: its
// proof lists hold, and the file's tools and per_call are taken.
func TestFloorVersion1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcpepoch")
	path := FloorPath(dir, "/p")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	v1 := `{"v": 1, "root": "/p", "proof": null, "exempt": [], "allowSelfReload": false, "credentials": {"prod": ["presence"]}}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFloor(dir, "/p")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}, Proof: []string{"terminal"}}}}
	eff, next, weak := f.Reconcile(cfg, false)
	if len(weak) != 1 || weak[0].Setting != "credentials.prod.proof" || !slices.Equal(eff.Credentials["prod"].Proof, []string{"presence"}) {
		t.Errorf("weakenings %v, prod in force %+v", weak, eff.Credentials["prod"])
	}
	if !slices.Equal(next.Credentials["prod"].Tools, []string{"deploy"}) {
		t.Errorf("the file's tools are not the floor's now: %+v", next.Credentials)
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

// The digest a person signs to accept a change names the floor replaced
// exactly as written (the same policy written again is another floor),
// the policy that replaces it and the nonce, not when, by what or with
// which acceptance the new floor is written.
func TestAcceptDigest(t *testing.T) {
	from := FloorOf("/p", &config.Config{Grants: config.Grants{Exempt: []string{"read"}}})
	to := FloorOf("/p", &config.Config{Grants: config.Grants{Exempt: []string{"read", "write"}}})
	d := AcceptDigest(from, to, "n1")
	written := to
	written.UpdatedAt, written.UpdatedBy, written.Accepted = time.Now(), "accepted:presence", &Acceptance{Proof: "presence", Signature: "x"}
	if AcceptDigest(from, written, "n1") != d {
		t.Error("the digest depends on when and how the new floor was written")
	}
	rewritten := from
	rewritten.UpdatedAt, rewritten.UpdatedBy = time.Now(), "strengthened"
	moved := to
	moved.Root = "/q"
	for name, other := range map[string][32]byte{
		"nonce": AcceptDigest(from, to, "n2"), "to": AcceptDigest(from, from, "n1"), "from": AcceptDigest(to, to, "n1"),
		"root": AcceptDigest(from, moved, "n1"), "the floor replaced as written": AcceptDigest(rewritten, to, "n1"),
	} {
		if other == d {
			t.Errorf("the digest does not depend on %s", name)
		}
	}
}

// An acceptance counts only in place of the floor held, at a level that
// floor counts (presence always, its signature left to the caller).
func TestCheckAcceptance(t *testing.T) {
	held := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"terminal"}}})
	other := held
	other.UpdatedBy = "strengthened"
	to := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"same-user"}}})
	accepted := func(proof string, from Floor, sig string) Floor {
		f := to
		f.UpdatedBy = AcceptedBy + proof
		f.Accepted = &Acceptance{Proof: proof, From: from.Digest().String(), Nonce: "n", Signature: sig}
		return f
	}
	counts := func(p approval.Proof) bool { return p == approval.ProofTerminal }
	for _, tc := range []struct {
		name string
		f    Floor
		want string // "" when it holds
	}{
		{"terminal, from the floor held", accepted("terminal", held, ""), ""},
		{"presence with a signature", accepted("presence", held, "sig"), ""},
		{"presence without one", accepted("presence", held, ""), "carries no signature"},
		{"same-user, which the floor does not count", accepted("same-user", held, ""), "does not count"},
		{"from another floor", accepted("terminal", other, ""), "not the one this host holds"},
		{"no acceptance", func() Floor { f := to; f.UpdatedBy = "accepted:terminal"; return f }(), "carries no acceptance"},
		{"a level other than its updatedBy", func() Floor { f := accepted("terminal", held, ""); f.UpdatedBy = "accepted:presence"; return f }(), "its acceptance is of proof"},
	} {
		err := tc.f.CheckAcceptance(held, counts)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// WeakerThan names each setting where one floor is weaker than another,
// and none where it is the same or stronger.
func TestWeakerThan(t *testing.T) {
	held := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"presence"}, Exempt: []string{"read"}},
		Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}, PerCall: true}}})
	weaker := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"same-user"}, Exempt: []string{"read"}},
		Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}}}})
	stronger := FloorOf("/p", &config.Config{Grants: config.Grants{Proof: []string{"presence"}, Exempt: []string{}},
		Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}, PerCall: true}}})
	var got []string
	for _, w := range weaker.WeakerThan(held, true) {
		got = append(got, w.Setting)
	}
	if want := []string{"credentials.prod.per_call", "grants.proof"}; !slices.Equal(got, want) {
		t.Errorf("weaker: %q, want %q", got, want)
	}
	if w := stronger.WeakerThan(held, true); len(w) != 0 {
		t.Errorf("stronger: %v, want none", w)
	}
	if w := held.WeakerThan(held, true); len(w) != 0 {
		t.Errorf("the same floor: %v, want none", w)
	}
}
