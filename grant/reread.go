package grant

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
)

// PerCall reports whether credential scope needs a person's decision for
// each call (credentials.NAME.per_call).
func (p *Policy) PerCall(scope string) bool { return p.creds[scope].PerCall }

// GrantsChanges says, one string per setting, how the approval settings
// of q differ from p's: `exempt ["a"] → ["a", "b*"]`, `proof ["presence"]
// (default: an authenticator is enrolled) → ["same-user"]`, `approval_wait
// 5m0s → 0s`, `credentials.NAME.per_call false → true`. enrolled names the
// default proof list (approval.DefaultProofText). Empty when they are the same.
func (p *Policy) GrantsChanges(q *Policy, enrolled bool) []string {
	var out []string
	if !slices.Equal(p.exempt, q.exempt) {
		out = append(out, "exempt "+quoted(p.exempt, "[]")+" → "+quoted(q.exempt, "[]"))
	}
	if !slices.Equal(p.proof, q.proof) || (p.proof == nil) != (q.proof == nil) {
		out = append(out, "proof "+proofList(p.proof, enrolled)+" → "+proofList(q.proof, enrolled))
	}
	if p.attested != q.attested {
		out = append(out, fmt.Sprintf("attestation required %v → %v", p.attested, q.attested))
	}
	if p.ApprovalWait() != q.ApprovalWait() {
		out = append(out, fmt.Sprintf("approval_wait %s → %s", waitText(p), waitText(q)))
	}
	names := slices.Sorted(maps.Keys(p.creds))
	for name := range q.creds {
		if _, ok := p.creds[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		a, b := p.creds[name], q.creds[name]
		key := "credentials." + name + "."
		if !slices.Equal(a.Tools, b.Tools) {
			out = append(out, key+"tools "+quoted(a.Tools, "[]")+" → "+quoted(b.Tools, "[]"))
		}
		if a.PerCall != b.PerCall {
			out = append(out, fmt.Sprintf("%sper_call %v → %v", key, a.PerCall, b.PerCall))
		}
		if !slices.Equal(a.Proof, b.Proof) || (a.Proof == nil) != (b.Proof == nil) {
			out = append(out, key+"proof "+scopeProofList(a.Proof)+" → "+scopeProofList(b.Proof))
		}
	}
	return out
}

func quoted(list []string, empty string) string {
	if len(list) == 0 {
		return empty
	}
	s := make([]string, len(list))
	for i, x := range list {
		s[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func proofList(l approval.Proofs, enrolled bool) string {
	if l == nil {
		return approval.DefaultProofText(enrolled)
	}
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = string(x)
	}
	return quoted(s, "[]")
}

func scopeProofList(l []string) string {
	if l == nil {
		return "(none)"
	}
	return quoted(l, "[]")
}

func waitText(p *Policy) string {
	d := p.ApprovalWait()
	if !p.waitSet {
		return d.String() + " (default)"
	}
	return d.Round(time.Millisecond).String()
}

// Outranks says why grant g, made under an earlier policy, no longer
// holds under p, or returns "" when it does: its proof level is not one
// p counts for its credential scopes (Policy.Proof), a tool of its scope
// now uses a credential scope it does not name, or (for a grant that is
// not per call) a tool now needs a decision per call. A grant recorded
// before proof levels were is judged by its tools alone. enrolled picks
// the default proof list.
func (p *Policy) Outranks(g *Grant, enrolled bool) string {
	if g.Proof != "" {
		if need := p.Proof(g.CredentialScope, enrolled); !need.Counts(g.Proof) {
			return fmt.Sprintf("approved with proof %s, which no longer counts (now: %s)", g.Proof, need)
		}
	}
	for _, t := range g.ToolScope {
		n := p.Need(t)
		switch {
		case n.Exempt:
		case !g.covers(t, n.Credentials):
			return fmt.Sprintf("tool %s now uses credential scope %s, which the grant does not name", t, strings.Join(n.Credentials, ", "))
		case n.PerCall && g.ExpiresWhen != ExpiresPerCall:
			return fmt.Sprintf("tool %s now needs an approval for each call", t)
		}
	}
	return ""
}
