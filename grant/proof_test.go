package grant

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
)

func TestPolicyProof(t *testing.T) {
	cred := func(proof ...string) config.Credential { return config.Credential{Tools: []string{"*"}, Proof: proof} }
	for _, tc := range []struct {
		name     string
		project  []string
		scopes   map[string]config.Credential
		creds    []string
		enrolled bool
		want     string
	}{
		{"default, nothing enrolled", nil, nil, nil, false, "terminal, client"},
		{"default, enrolled", nil, nil, nil, true, "presence"},
		{"project list", []string{"same-user"}, nil, nil, true, "same-user"},
		{"scope narrows", []string{"presence", "terminal"}, map[string]config.Credential{"pay": cred("presence")}, []string{"pay"}, false, "presence"},
		{"scope stricter, disjoint", []string{"terminal"}, map[string]config.Credential{"pay": cred("presence")}, []string{"pay"}, false, "presence"},
		{"project stricter, disjoint", []string{"presence"}, map[string]config.Credential{"pay": cred("same-user")}, []string{"pay"}, false, "presence"},
		{"scope not named", []string{"same-user"}, map[string]config.Credential{"pay": cred("presence")}, []string{"other"}, false, "same-user"},
		{"scope over default", nil, map[string]config.Credential{"pay": cred("presence")}, []string{"pay"}, false, "presence"},
	} {
		p := NewPolicy(&config.Config{Grants: config.Grants{Proof: tc.project}, Credentials: tc.scopes})
		if got := p.Proof(tc.creds, tc.enrolled).String(); got != tc.want {
			t.Errorf("%s: Proof = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Outranks ends what a stricter policy no longer counts, and only that.
func TestOutranks(t *testing.T) {
	g := &Grant{ToolScope: []string{"deploy", "status"}, CredentialScope: []string{"prod"},
		ExpiresWhen: ExpiresRunEnds, Proof: approval.ProofTerminal}
	policy := func(proof []string, creds map[string]config.Credential) *Policy {
		return NewPolicy(&config.Config{Grants: config.Grants{Proof: proof}, Credentials: creds})
	}
	prod := map[string]config.Credential{"prod": {Tools: []string{"deploy"}}}
	for _, tc := range []struct {
		name string
		p    *Policy
		want string // "" or a part of why
	}{
		{"the same policy", policy(nil, prod), ""},
		{"proof raised", policy([]string{"presence"}, prod), "approved with proof terminal, which no longer counts (now: presence)"},
		{"scope proof raised", policy(nil, map[string]config.Credential{"prod": {Tools: []string{"deploy"}, Proof: []string{"presence"}}}), "proof terminal"},
		{"per call", policy(nil, map[string]config.Credential{"prod": {Tools: []string{"deploy"}, PerCall: true}}), "tool deploy now needs an approval for each call"},
		{"a new scope", policy(nil, map[string]config.Credential{"prod": {Tools: []string{"deploy"}}, "ops": {Tools: []string{"status"}}}),
			"tool status now uses credential scope ops, which the grant does not name"},
		{"a tool exempt now", &Policy{exempt: []string{"deploy", "status"}}, ""},
	} {
		got := tc.p.Outranks(g, false)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A re-read that sets grants.proof names the default it replaces as the
// list in force, which depends on whether an authenticator is enrolled.
func TestGrantsChangesNamesDefaultProof(t *testing.T) {
	p := NewPolicy(&config.Config{})
	q := NewPolicy(&config.Config{Grants: config.Grants{Proof: []string{"same-user"}}})
	for enrolled, want := range map[bool]string{
		true:  `proof ["presence"] (default: an authenticator is enrolled) → ["same-user"]`,
		false: `proof ["terminal", "client"] (default: no authenticator is enrolled) → ["same-user"]`,
	} {
		if got := p.GrantsChanges(q, enrolled); len(got) != 1 || got[0] != want {
			t.Errorf("enrolled=%v: %q, want [%s]", enrolled, got, want)
		}
	}
}
