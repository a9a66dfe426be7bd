package grant

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
)

// WithGrants returns a copy of p with the [grants] settings of g
// (exempt, proof, approval_wait, as config.Load validated them) and p's
// credential scopes: a running host re-reads [grants] from a changed
// mcpepoch.toml, while credential sources were read once when it started.
func (p *Policy) WithGrants(g config.Grants) *Policy {
	q := &Policy{exempt: slices.Clone(g.Exempt), creds: p.creds, proof: toProofs(g.Proof)}
	if g.ApprovalWait != "" {
		cfg := config.Config{Grants: g}
		q.wait, _ = cfg.ApprovalWait()
		q.waitSet = true
	}
	return q
}

// GrantsChanges says, one string per setting, how the [grants] settings
// of q differ from p's: `exempt ["a"] → ["a", "b*"]`, `proof (default) →
// ["same-user"]`, `approval_wait 5m0s → 0s`. Empty when they are the same.
func (p *Policy) GrantsChanges(q *Policy) []string {
	var out []string
	if !slices.Equal(p.exempt, q.exempt) {
		out = append(out, "exempt "+quoted(p.exempt, "[]")+" → "+quoted(q.exempt, "[]"))
	}
	if !slices.Equal(p.proof, q.proof) || (p.proof == nil) != (q.proof == nil) {
		out = append(out, "proof "+proofList(p.proof)+" → "+proofList(q.proof))
	}
	if p.ApprovalWait() != q.ApprovalWait() {
		out = append(out, fmt.Sprintf("approval_wait %s → %s", waitText(p), waitText(q)))
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

func proofList(l Proofs) string {
	if l == nil {
		return "(default)"
	}
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = string(x)
	}
	return quoted(s, "[]")
}

func waitText(p *Policy) string {
	d := p.ApprovalWait()
	if !p.waitSet {
		return d.String() + " (default)"
	}
	return d.Round(time.Millisecond).String()
}
