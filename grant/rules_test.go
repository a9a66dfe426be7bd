package grant_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
)

func TestNeed(t *testing.T) {
	p := testPolicy()
	for _, c := range []struct {
		tool string
		want grant.Need
	}{
		{"version", grant.Need{Tool: "version", Exempt: true}},
		{"debug_dump", grant.Need{Tool: "debug_dump", Exempt: true}},
		{"read_file", grant.Need{Tool: "read_file"}},
		{"slow_write", grant.Need{Tool: "slow_write", Credentials: []string{"audit-readers", "inventory-api-staging"}}},
		{"publish_preview", grant.Need{Tool: "publish_preview", Credentials: []string{"payments"}, PerCall: true}},
	} {
		if got := p.Need(c.tool); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Need(%q) = %+v, want %+v", c.tool, got, c.want)
		}
	}
}

func TestNeedCoveredBy(t *testing.T) {
	p := testPolicy()
	write := p.Need("slow_write")
	publish := p.Need("publish_preview")
	full := []string{"audit-readers", "inventory-api-staging"}
	perCall := func(g *grant.Grant) *grant.Grant { g.ExpiresWhen = grant.ExpiresPerCall; return g }
	revoked := func(g *grant.Grant) *grant.Grant { now := t0; g.RevokedAt = &now; return g }
	expiring := func(g *grant.Grant) *grant.Grant { g.ExpiresWhen = "1m"; return g }
	for _, c := range []struct {
		name string
		need grant.Need
		g    *grant.Grant
		at   time.Time
		want bool
	}{
		{"exempt needs nothing", p.Need("version"), nil, t0, true},
		{"no grant", write, nil, t0, false},
		{"tool and every scope", write, newGrant("g", epochA, []string{"slow_write"}, full), t0, true},
		{"another epoch", write, newGrant("g", epochB, []string{"slow_write"}, full), t0, false},
		{"a scope missing", write, newGrant("g", epochA, []string{"slow_write"}, full[:1]), t0, false},
		{"another tool", write, newGrant("g", epochA, []string{"read_file"}, full), t0, false},
		{"revoked", write, revoked(newGrant("g", epochA, []string{"slow_write"}, full)), t0, false},
		{"expired", write, expiring(newGrant("g", epochA, []string{"slow_write"}, full)), t0.Add(2 * time.Minute), false},
		{"per-call scope, run-long grant", publish, newGrant("g", epochA, []string{"publish_preview"}, []string{"payments"}), t0, false},
		{"per-call scope, per-call grant", publish, perCall(newGrant("g", epochA, []string{"publish_preview"}, []string{"payments"})), t0, true},
		{"per-call grant, ordinary tool", write, perCall(newGrant("g", epochA, []string{"slow_write"}, full)), t0, true},
	} {
		if got := c.need.CoveredBy(c.g, epochA, c.at); got != c.want {
			t.Errorf("%s: CoveredBy = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestScope(t *testing.T) {
	p := testPolicy()
	catalog := []string{"version", "slow_write", "publish_preview", "read_file"}
	for _, c := range []struct {
		name         string
		a            grant.Approval
		tools, creds []string
		err          string
	}{
		{name: "nothing named", a: grant.Approval{}, err: "no tools named"},
		{name: "not in the catalog", a: grant.Approval{Tools: []string{"drop_db"}}, err: `tool "drop_db" is not in the current catalog of epoch ` + string(epochA)},
		{name: "scope not named", a: grant.Approval{Tools: []string{"slow_write"}, Credentials: []string{"audit-readers"}},
			err: "credential scope [inventory-api-staging], which the approval does not name"},
		{name: "per-call tool, run-long", a: grant.Approval{Tools: []string{"publish_preview"}, Credentials: []string{"payments"}, Expires: grant.ExpiresRunEnds},
			err: "tool publish_preview uses credential scope [payments], which needs an approval for each call"},
		{name: "per-call tool, per-call", a: grant.Approval{Tools: []string{"publish_preview"}, Credentials: []string{"payments"}, Expires: grant.ExpiresPerCall},
			tools: []string{"publish_preview"}, creds: []string{"payments"}},
		{name: "named scopes sorted", a: grant.Approval{Tools: []string{"slow_write", "read_file"}, Credentials: []string{"inventory-api-staging", "audit-readers"}, Expires: "30m"},
			tools: []string{"slow_write", "read_file"}, creds: []string{"audit-readers", "inventory-api-staging"}},
		{name: "all adds the scopes", a: grant.Approval{All: true, Credentials: []string{"payments"}, Expires: grant.ExpiresRunEnds},
			tools: catalog, creds: []string{"audit-readers", "inventory-api-staging", "payments"}},
	} {
		tools, creds, err := p.Scope(c.a, epochA, catalog)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !slices.Equal(tools, c.tools) || !slices.Equal(creds, c.creds):
			t.Errorf("%s: tools %v creds %v, want %v %v", c.name, tools, creds, c.tools, c.creds)
		}
	}
}

func TestReview(t *testing.T) {
	p := testPolicy()
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc})
		return b
	}
	approved := []json.RawMessage{tool("version", "v"), tool("slow_write", "writes")}
	tools := []json.RawMessage{tool("version", "v"), tool("slow_write", "writes"), tool("publish_preview", "publishes")}
	names := []string{"version", "slow_write", "publish_preview"}

	c := p.Review(approved, tools, names)
	if len(c.CatalogChanges) != 1 || c.CatalogChanges[0].Tool != "publish_preview" || c.CatalogChanges[0].Kind != "tool_added" {
		t.Errorf("changes %v, want publish_preview added", c.CatalogChanges)
	}
	wantCreds := map[string][]string{"slow_write": {"audit-readers", "inventory-api-staging"}, "publish_preview": {"payments"}}
	if !reflect.DeepEqual(c.Credentials, wantCreds) {
		t.Errorf("credentials %v, want %v", c.Credentials, wantCreds)
	}
	if !slices.Equal(c.PerCall, []string{"payments"}) || !slices.Equal(c.Exempt, []string{"version"}) {
		t.Errorf("per-call %v exempt %v, want [payments] [version]", c.PerCall, c.Exempt)
	}
	if got := c.Granted(); !slices.Equal(got, []string{"publish_preview", "slow_write"}) {
		t.Errorf("Granted() = %v", got)
	}
	if got := c.Scopes([]string{"publish_preview", "slow_write"}); !slices.Equal(got, []string{"payments", "audit-readers", "inventory-api-staging"}) {
		t.Errorf("Scopes = %v, want the tools' scopes in the order they are first used", got)
	}
	if got := c.PerCallTools([]string{"slow_write", "publish_preview"}); !slices.Equal(got, []string{"publish_preview"}) {
		t.Errorf("PerCallTools = %v", got)
	}
	if got := c.PerCallScopes([]string{"slow_write", "publish_preview"}); !slices.Equal(got, []string{"payments"}) {
		t.Errorf("PerCallScopes = %v", got)
	}

	// A first review has no base: every tool is new. No catalog yet: the
	// review covers nothing, and its lists are empty, not null, on the wire.
	if c := p.Review(nil, tools, names); len(c.CatalogChanges) != 3 {
		t.Errorf("first review: %d changes, want every tool added", len(c.CatalogChanges))
	}
	b, _ := json.Marshal(p.Review(nil, nil, nil))
	if string(b) != `{"catalogChanges":[],"credentials":{}}` {
		t.Errorf("review without a catalog = %s", b)
	}
}
