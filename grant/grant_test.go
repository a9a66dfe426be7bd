package grant_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
)

// testPolicy is the policy of the seed's project: version needs no grant,
// slow_write uses the inventory-api-staging scope, publish_preview the
// payments scope, which needs an approval per call.
func testPolicy() *grant.Policy {
	return grant.NewPolicy(&config.Config{
		Grants: config.Grants{Exempt: []string{"version", "debug_*"}},
		Credentials: map[string]config.Credential{
			"inventory-api-staging": {Tools: []string{"slow_write"}},
			"payments":              {Tools: []string{"publish_*"}, PerCall: true},
			"audit-readers":         {Tools: []string{"slow_*"}},
		},
	})
}

var (
	t0     = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	epochA = epoch.New(t0)
	epochB = epoch.New(t0.Add(time.Minute))
)

// newGrant returns a live grant of epochA issued at t0, running until the
// agent run ends.
func newGrant(id epoch.GrantID, ep epoch.Epoch, tools, creds []string) *grant.Grant {
	return &grant.Grant{ID: id, AgentRun: "run1", ServerLabel: "inventory-local", ExecutionEpoch: ep,
		ToolScope: tools, CredentialScope: creds, IssuedAt: t0, ExpiresWhen: grant.ExpiresRunEnds,
		ApprovedBy: "alice", CatalogRevision: "sha256:aa"}
}

func storeWith(t *testing.T, gs ...*grant.Grant) *grant.Store {
	t.Helper()
	s, err := grant.Open(filepath.Join(t.TempDir(), "run1.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		s.Add(g)
	}
	return s
}

func wantRefusal(t *testing.T, d grant.Decision, refusal string) {
	t.Helper()
	if d.Refusal != refusal {
		t.Fatalf("refusal %q, want %q (decision %+v)", d.Refusal, refusal, d)
	}
	if refusal != "" && d.Grant != nil {
		t.Fatalf("refused decision names covering grant %s", d.Grant.ID)
	}
}

func TestCheckExempt(t *testing.T) {
	s := storeWith(t)
	p := testPolicy()
	for _, tool := range []string{"version", "debug_dump"} {
		d := s.Check(p, tool, "", epochA, t0)
		wantRefusal(t, d, "")
		if d.Grant != nil || len(d.Credentials) != 0 {
			t.Errorf("%s: exempt tool got grant %v, credentials %v", tool, d.Grant, d.Credentials)
		}
	}
	// Exemption is by name only: a tool whose name merely contains an
	// exempt one still needs a grant.
	wantRefusal(t, s.Check(p, "version_bump", "", epochA, t0), grant.AuthorizationRequired)
}

func TestCheckZeroPolicyRequiresEveryTool(t *testing.T) {
	s := storeWith(t)
	for _, tool := range []string{"version", "read_file"} {
		wantRefusal(t, s.Check(&grant.Policy{}, tool, "", epochA, t0), grant.AuthorizationRequired)
	}
}

func TestCheckRequired(t *testing.T) {
	s := storeWith(t)
	d := s.Check(testPolicy(), "slow_write", "", epochA, t0)
	wantRefusal(t, d, grant.AuthorizationRequired)
	if d.Stale != nil {
		t.Errorf("no grant ever existed, yet Stale = %v", d.Stale)
	}
	if want := []string{"audit-readers", "inventory-api-staging"}; !slices.Equal(d.Credentials, want) {
		t.Errorf("credentials %v, want %v (sorted, every scope whose globs match)", d.Credentials, want)
	}
	if d.PerCall {
		t.Error("slow_write's scopes are not per call")
	}
}

func TestCheckCovered(t *testing.T) {
	g := newGrant("g1", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging"})
	s := storeWith(t, g)
	d := s.Check(testPolicy(), "slow_write", "", epochA, t0.Add(time.Hour))
	wantRefusal(t, d, "")
	if d.Grant != g {
		t.Fatalf("covering grant %v, want g1", d.Grant)
	}
	// The same grant does not reach another tool, even one the person
	// might think harmless.
	wantRefusal(t, s.Check(testPolicy(), "read_file", "", epochA, t0), grant.AuthorizationRequired)
}

func TestCheckCredentialScopeCoverage(t *testing.T) {
	p := testPolicy()
	for _, creds := range [][]string{nil, {"inventory-api-staging"}, {"audit-readers"}, {"payments"}} {
		s := storeWith(t, newGrant("g", epochA, []string{"slow_write"}, creds))
		wantRefusal(t, s.Check(p, "slow_write", "", epochA, t0), grant.AuthorizationRequired)
	}
	// Extra scopes do no harm.
	s := storeWith(t, newGrant("g", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging", "payments"}))
	wantRefusal(t, s.Check(p, "slow_write", "", epochA, t0), "")
}

func TestCheckOtherEpoch(t *testing.T) {
	// A live grant of another epoch covers nothing here; it was never
	// revoked by an epoch change, so the call is required, not stale.
	g := newGrant("g1", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging"})
	s := storeWith(t, g)
	wantRefusal(t, s.Check(testPolicy(), "slow_write", "", epochB, t0), grant.AuthorizationRequired)
}

func TestCheckStale(t *testing.T) {
	creds := []string{"audit-readers", "inventory-api-staging"}
	old := newGrant("g1", epochA, []string{"slow_write"}, creds)
	newer := newGrant("g2", epochA, []string{"slow_write", "other"}, creds)
	other := newGrant("g3", epochA, []string{"other"}, nil)
	s := storeWith(t, old, newer, other)
	if n := s.RevokeEpochFor(epochA, grant.RevokedEpochChanged, t0.Add(time.Minute)); n != 3 {
		t.Fatalf("RevokeEpoch revoked %d grants, want 3", n)
	}
	for _, g := range s.Grants {
		if g.RevokedReason != grant.RevokedEpochChanged || g.RevokedAt == nil || g.Live(t0.Add(time.Hour)) {
			t.Fatalf("grant %s after RevokeEpoch: revoked %v reason %q", g.ID, g.RevokedAt, g.RevokedReason)
		}
	}
	if n := s.RevokeEpochFor(epochA, grant.RevokedEpochChanged, t0.Add(2*time.Minute)); n != 0 {
		t.Errorf("second RevokeEpoch revoked %d grants, want 0", n)
	}

	d := s.Check(testPolicy(), "slow_write", "", epochB, t0.Add(2*time.Minute))
	wantRefusal(t, d, grant.AuthorizationStale)
	if d.Stale != newer {
		t.Errorf("stale grant %v, want the most recent one that covered the call (g2)", d.Stale)
	}
	// The revoked grant does not cover the call in its own epoch either.
	wantRefusal(t, s.Check(testPolicy(), "slow_write", "", epochA, t0.Add(2*time.Minute)), grant.AuthorizationRequired)
	// A tool no revoked grant covered is required, not stale.
	wantRefusal(t, s.Check(testPolicy(), "read_file", "", epochB, t0.Add(2*time.Minute)), grant.AuthorizationRequired)
}

func TestCheckRevokedByUserIsNotStale(t *testing.T) {
	for _, reason := range []string{grant.RevokedByUser, grant.RevokedRunEnded, grant.RevokedUsed, grant.RevokedExpired} {
		g := newGrant("g1", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging"})
		s := storeWith(t, g)
		if !s.Revoke("g1", reason, t0) {
			t.Fatal("Revoke found no live g1")
		}
		if s.Revoke("g1", reason, t0) {
			t.Fatal("Revoke revoked g1 twice")
		}
		wantRefusal(t, s.Check(testPolicy(), "slow_write", "", epochB, t0), grant.AuthorizationRequired)
	}
}

func TestCheckPerCall(t *testing.T) {
	p := testPolicy()
	now := t0.Add(time.Second)

	// A grant until the run ends does not cover a per-call scope.
	runLong := newGrant("g1", epochA, []string{"publish_preview"}, []string{"payments"})
	s := storeWith(t, runLong)
	d := s.Check(p, "publish_preview", "", epochA, now)
	wantRefusal(t, d, grant.AuthorizationRequired)
	if !d.PerCall || !slices.Equal(d.Credentials, []string{"payments"}) {
		t.Errorf("decision %+v: want PerCall and credentials [payments]", d)
	}

	once := newGrant("g2", epochA, []string{"publish_preview"}, []string{"payments"})
	once.ExpiresWhen = grant.ExpiresPerCall
	s.Add(once)
	d = s.Check(p, "publish_preview", "", epochA, now)
	wantRefusal(t, d, "")
	if d.Grant != once {
		t.Fatalf("covering grant %v, want the per-call grant g2", d.Grant)
	}
	// Checking alone does not use it up: a call refused later (a schema
	// check) must not spend the approval.
	if d2 := s.Check(p, "publish_preview", "", epochA, now); d2.Grant != once {
		t.Fatalf("second check before Use: %+v", d2)
	}
	s.Use(d.Grant, now)
	if once.RevokedReason != grant.RevokedUsed || once.RevokedAt == nil {
		t.Fatalf("after Use: revoked %v reason %q, want %q", once.RevokedAt, once.RevokedReason, grant.RevokedUsed)
	}
	wantRefusal(t, s.Check(p, "publish_preview", "", epochA, now), grant.AuthorizationRequired)

	// Use leaves other grants alone.
	s.Use(runLong, now)
	s.Use(nil, now)
	if runLong.RevokedAt != nil {
		t.Errorf("Use revoked a grant that is not per call: %q", runLong.RevokedReason)
	}
}

func TestCheckPerCallGrantCoversNonPerCallTool(t *testing.T) {
	g := newGrant("g1", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging"})
	g.ExpiresWhen = grant.ExpiresPerCall
	s := storeWith(t, g)
	d := s.Check(testPolicy(), "slow_write", "", epochA, t0)
	wantRefusal(t, d, "")
	s.Use(d.Grant, t0)
	wantRefusal(t, s.Check(testPolicy(), "slow_write", "", epochA, t0), grant.AuthorizationRequired)
}

func TestCheckDurationExpiry(t *testing.T) {
	g := newGrant("g1", epochA, []string{"slow_write"}, []string{"audit-readers", "inventory-api-staging"})
	g.ExpiresWhen = "30m"
	s := storeWith(t, g)
	p := testPolicy()
	wantRefusal(t, s.Check(p, "slow_write", "", epochA, t0.Add(29*time.Minute)), "")
	wantRefusal(t, s.Check(p, "slow_write", "", epochA, t0.Add(30*time.Minute)), "")
	wantRefusal(t, s.Check(p, "slow_write", "", epochA, t0.Add(30*time.Minute+time.Nanosecond)), grant.AuthorizationRequired)
	if g.Live(t0.Add(31 * time.Minute)) {
		t.Error("grant live 31 minutes after a 30m approval")
	}
	if live := s.Live(t0.Add(31 * time.Minute)); len(live) != 0 {
		t.Errorf("Store.Live after expiry: %v", live)
	}
	if live := s.Live(t0.Add(time.Minute)); len(live) != 1 {
		t.Errorf("Store.Live before expiry: %d grants, want 1", len(live))
	}
}

func TestParseExpiry(t *testing.T) {
	for _, ok := range []string{grant.ExpiresRunEnds, grant.ExpiresPerCall, "30m", "1h30m", "10s"} {
		if err := grant.ParseExpiry(ok); err != nil {
			t.Errorf("ParseExpiry(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "forever", "0s", "-5m", "30", "per_call"} {
		if err := grant.ParseExpiry(bad); err == nil {
			t.Errorf("ParseExpiry(%q) accepted it", bad)
		}
	}
}

func TestPolicy(t *testing.T) {
	p := testPolicy()
	for tool, needs := range map[string]bool{"version": false, "debug_a": false, "debug": true, "slow_write": true, "x": true} {
		if got := p.Needs(tool); got != needs {
			t.Errorf("Needs(%q) = %v, want %v", tool, got, needs)
		}
	}
	scopes, perCall := p.Credentials("publish_preview")
	if !slices.Equal(scopes, []string{"payments"}) || !perCall {
		t.Errorf("Credentials(publish_preview) = %v, %v", scopes, perCall)
	}
	scopes, perCall = p.Credentials("version")
	if len(scopes) != 0 || perCall {
		t.Errorf("Credentials(version) = %v, %v", scopes, perCall)
	}
}

func TestStoreRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	path := filepath.Join(dir, "run1.json")
	s, err := grant.Open(path)
	if err != nil {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if len(s.Grants) != 0 {
		t.Fatalf("new store has %d grants", len(s.Grants))
	}
	a := newGrant("g1", epochA, []string{"slow_write"}, []string{"inventory-api-staging"})
	b := newGrant("g2", epochB, []string{"publish_preview"}, []string{"payments"})
	b.ExpiresWhen = grant.ExpiresPerCall
	s.Add(a)
	s.Add(b)
	s.Use(b, t0.Add(time.Second))
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	got, err := grant.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(s.Grants)
	gotJSON, _ := json.Marshal(got.Grants)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("round trip:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if !got.Grants[1].RevokedAt.Equal(t0.Add(time.Second)) || got.Grants[1].RevokedReason != grant.RevokedUsed {
		t.Errorf("revocation lost: %+v", got.Grants[1])
	}
	// The file uses the seed's field names.
	raw, _ := os.ReadFile(path)
	var f struct {
		V      int                          `json:"v"`
		Grants []map[string]json.RawMessage `json:"grants"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.V != 1 || len(f.Grants) != 2 {
		t.Fatalf("file %s: %v\n%s", path, err, raw)
	}
	for _, k := range []string{"id", "agentRun", "serverLabel", "executionEpoch", "toolScope", "credentialScope", "issuedAt", "expiresWhen", "approvedBy"} {
		if _, ok := f.Grants[0][k]; !ok {
			t.Errorf("grant in file lacks %q:\n%s", k, raw)
		}
	}

	all, err := grant.ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(all[path].Grants) != 2 {
		t.Errorf("ReadAll: %v", all)
	}
}

func TestStoreOpenCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"syntax":  `{"v":1,"grants":[`,
		"version": `{"v":2,"grants":[]}`,
		"type":    `{"v":1,"grants":{"id":"x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "run1.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := grant.Open(path)
			var ce *grant.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want a *grant.CorruptError", err)
			}
			if ce.Path != path || !errorsMention(err, path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("corrupt file changed to %q", b)
			}
			if _, err := grant.ReadAll(dir); !errors.As(err, &ce) {
				t.Errorf("ReadAll: %v, want a *grant.CorruptError", err)
			}
		})
	}
}

func errorsMention(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}

func TestRevokeAll(t *testing.T) {
	a := newGrant("g1", epochA, []string{"a"}, nil)
	b := newGrant("g2", epochA, []string{"b"}, nil)
	s := storeWith(t, a, b)
	s.Revoke("g1", grant.RevokedByUser, t0)
	if n := s.RevokeAll(grant.RevokedRunEnded, t0.Add(time.Second)); n != 1 {
		t.Fatalf("RevokeAll revoked %d, want 1", n)
	}
	if a.RevokedReason != grant.RevokedByUser || b.RevokedReason != grant.RevokedRunEnded {
		t.Errorf("reasons %q, %q", a.RevokedReason, b.RevokedReason)
	}
}

// A grant covers the definitions the person reviewed: once the server
// redefines a tool within the epoch, the grant no longer covers it, and the
// refusal names the grant; the other tools stay covered.
func TestCheckRedefinedToolNotCovered(t *testing.T) {
	s := &grant.Store{}
	g := &grant.Grant{ID: "g1", ExecutionEpoch: epochA, ToolScope: []string{"a", "b"}, ExpiresWhen: grant.ExpiresRunEnds,
		IssuedAt: t0, Definitions: map[string]string{"a": "sha256:a1", "b": "sha256:b1"}}
	s.Add(g)
	p := &grant.Policy{}
	if d := s.Check(p, "a", "sha256:a1", epochA, t0); d.Grant != g || d.Refusal != "" {
		t.Fatalf("reviewed definition: %+v", d)
	}
	d := s.Check(p, "a", "sha256:a2", epochA, t0)
	if d.Grant != nil || d.Refusal != grant.AuthorizationRequired || d.Redefined != g {
		t.Fatalf("redefined tool: %+v, want authorization_required naming the grant", d)
	}
	if d := s.Check(p, "b", "sha256:b1", epochA, t0); d.Grant != g {
		t.Fatalf("the other tool: %+v", d)
	}
	g2 := &grant.Grant{ID: "g2", ExecutionEpoch: epochA, ToolScope: []string{"a"}, ExpiresWhen: grant.ExpiresRunEnds,
		IssuedAt: t0, Definitions: map[string]string{"a": "sha256:a2"}}
	s.Add(g2)
	if d := s.Check(p, "a", "sha256:a2", epochA, t0); d.Grant != g2 || d.Redefined != nil {
		t.Fatalf("after a new approval: %+v", d)
	}
}
