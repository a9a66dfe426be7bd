package grant

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
)

// The approval rules live in this file, so that every channel a person
// approves through (the terminal's mcpepoch approve today) only collects the
// person's decision:
//
//   - what a call needs and whether a grant covers it: [Policy.Need],
//     [Need.CoveredBy], and [Store.Check] over a run's grants;
//   - what an approval grants: [Policy.Scope];
//   - what a review covers: [Policy.Review] and the [Coverage] it returns.

// Policy says which tools need a grant and which credential scopes a tool
// uses, from mcpepoch.toml. The zero Policy requires a grant for every tool.
type Policy struct {
	exempt []string
	creds  map[string]config.Credential
	proof  approval.Proofs // grants.proof; nil: approval.DefaultProof
	wait   time.Duration
	// waitSet: wait came from grants.approval_wait (the zero Policy
	// waits config.DefaultApprovalWait).
	waitSet bool
	// attested: grants.attestation = "required".
	attested bool
}

// AttestationRequired reports grants.attestation = "required": only an
// authenticator with a verified FIDO attestation proves presence.
func (p *Policy) AttestationRequired() bool { return p.attested }

// ApprovalWait is how long a call that needs a grant is held while a
// person is asked through the MCP client (grants.approval_wait); zero:
// never held.
func (p *Policy) ApprovalWait() time.Duration {
	if !p.waitSet {
		return config.DefaultApprovalWait
	}
	return p.wait
}

// NewPolicy returns the policy of cfg (already validated by config.Load).
func NewPolicy(cfg *config.Config) *Policy {
	p := &Policy{exempt: cfg.Grants.Exempt, creds: cfg.Credentials, proof: approval.ParseProofs(cfg.Grants.Proof),
		attested: cfg.Grants.Attestation == config.AttestationRequired}
	if cfg.Grants.ApprovalWait != "" {
		p.wait, _ = cfg.ApprovalWait()
		p.waitSet = true
	}
	return p
}

// Proof returns the proof list that applies to a grant of credential
// scopes creds: grants.proof (or approval.DefaultProof(enrolled) when unset) and
// the proof list of each scope in creds that has one. The stricter wins (approval.Stricter): a
// level counts only if every list that applies names it; when no level is
// named by all of them, the list whose weakest level is strongest applies
// alone (the scope's, on a tie).
func (p *Policy) Proof(creds []string, enrolled bool) approval.Proofs {
	out := approval.DefaultProof(enrolled)
	if p.proof != nil {
		out = p.proof
	}
	for _, c := range creds {
		out = approval.Stricter(out, approval.ParseProofs(p.creds[c].Proof))
	}
	return slices.Clone(out)
}

// Needs reports whether a call to tool needs a grant: every tool does,
// unless grants.exempt names it (doublestar glob).
func (p *Policy) Needs(tool string) bool {
	for _, g := range p.exempt {
		if ok, _ := doublestar.Match(g, tool); ok {
			return false
		}
	}
	return true
}

// Credentials returns the credential scopes tool uses, sorted, and whether
// any of them requires approval per call.
func (p *Policy) Credentials(tool string) (scopes []string, perCall bool) {
	for name, c := range p.creds {
		for _, g := range c.Tools {
			if ok, _ := doublestar.Match(g, tool); ok {
				scopes = append(scopes, name)
				perCall = perCall || c.PerCall
				break
			}
		}
	}
	slices.Sort(scopes)
	return scopes, perCall
}

// Need is what a call to one tool needs from a grant.
type Need struct {
	Tool string
	// Exempt: grants.exempt names the tool; the call needs no grant, and
	// Credentials and PerCall are empty.
	Exempt bool
	// Credentials are the credential scopes the tool uses, sorted; a grant
	// must name every one.
	Credentials []string
	// PerCall: one of the scopes needs a person's decision for each call,
	// so only a live per-call grant covers it.
	PerCall bool
}

// Need answers "what does a call to tool need" under p.
func (p *Policy) Need(tool string) Need {
	if !p.Needs(tool) {
		return Need{Tool: tool, Exempt: true}
	}
	n := Need{Tool: tool}
	n.Credentials, n.PerCall = p.Credentials(tool)
	return n
}

// CoveredBy reports whether g covers a call with need n made under epoch ep
// at now: g is live, bound to ep, names the tool and every credential scope
// it uses, and, when n is per-call, is a per-call grant itself. Every g,
// nil included, covers an exempt need. Annotations take no part.
func (n Need) CoveredBy(g *Grant, ep epoch.Epoch, now time.Time) bool {
	if n.Exempt {
		return true
	}
	if g == nil || !g.Live(now) || g.ExecutionEpoch != ep || !g.covers(n.Tool, n.Credentials) {
		return false
	}
	return !n.PerCall || g.ExpiresWhen == ExpiresPerCall
}

// Reviewed reports whether the definition of tool the person reviewed
// for g is def, the digest of its current definition: a tool redefined
// within an epoch (the server's own list_changed, a runtime registration)
// is not what was approved. A grant without recorded definitions (written
// before they were) counts as reviewed.
func (g *Grant) Reviewed(tool, def string) bool {
	return g.Definitions == nil || g.Definitions[tool] == def
}

// covers reports whether g's scopes include tool and every credential scope
// in creds.
func (g *Grant) covers(tool string, creds []string) bool {
	if !slices.Contains(g.ToolScope, tool) {
		return false
	}
	for _, c := range creds {
		if !slices.Contains(g.CredentialScope, c) {
			return false
		}
	}
	return true
}

// Decision is the outcome of Check.
type Decision struct {
	// Grant is the grant that covers the call; nil when refused or when the
	// tool needs none.
	Grant *Grant
	// Refusal is "" when the call may proceed, else "authorization_required"
	// or "authorization_stale".
	Refusal string
	// Stale is the revoked grant that would have covered the call under an
	// older epoch (authorization_stale only).
	Stale *Grant
	// Redefined is a grant that would have covered the call had the server
	// not redefined the tool since it was approved (authorization_required
	// only).
	Redefined *Grant
	// Revoked is the grant that would have covered the call had a person
	// not revoked it (mcpepoch revoke), or a stricter policy not ended it
	// (RevokedPolicyRaised): authorization_required only. The
	// newest grant that would have covered the call decides between Revoked
	// and Stale, so a revocation is never reported as an older epoch's end.
	Revoked *Grant
	// Credentials are the credential scopes the tool uses; PerCall reports
	// that one of them needs a fresh approval for each call.
	Credentials []string
	PerCall     bool
}

// Refusals of Check.
const (
	AuthorizationRequired = "authorization_required"
	AuthorizationStale    = "authorization_stale"
)

// Check decides whether a call to tool under epoch ep is covered at now by
// one of the store's grants; def is the digest of the tool's current
// definition. The first grant that covers the call's Need (see
// [Need.CoveredBy]) and for which the person reviewed def (see
// [Grant.Reviewed]) is the Decision's Grant; the caller marks a
// per-call grant used with Use once the call is dispatched. A tool the
// policy exempts needs nothing. Without a covering grant, the newest grant
// that would have covered the call decides: revoked by a person, the call
// is authorization_required with Decision.Revoked; revoked by an epoch
// change, it is authorization_stale (seed: "authorization follows the
// execution epoch"); with neither, authorization_required.
func (s *Store) Check(p *Policy, tool, def string, ep epoch.Epoch, now time.Time) Decision {
	n := p.Need(tool)
	if n.Exempt {
		return Decision{}
	}
	d := Decision{Credentials: n.Credentials, PerCall: n.PerCall}
	for _, g := range s.Grants {
		if !n.CoveredBy(g, ep, now) {
			continue
		}
		if g.Reviewed(tool, def) {
			d.Grant, d.Redefined = g, nil
			return d
		}
		d.Redefined = g
	}
	if d.Redefined != nil {
		d.Refusal = AuthorizationRequired
		return d
	}
	d.Refusal = AuthorizationRequired
	for i := len(s.Grants) - 1; i >= 0; i-- {
		g := s.Grants[i]
		if !g.covers(tool, d.Credentials) {
			continue
		}
		switch {
		case g.RevokedReason == RevokedByUser || g.RevokedReason == RevokedPolicyRaised:
			d.Revoked = g
			return d
		case g.RevokedReason == RevokedEpochChanged && g.ExecutionEpoch != ep:
			d.Refusal, d.Stale = AuthorizationStale, g
			return d
		}
	}
	return d
}

// Approval is a person's decision as a channel collected it: the tools
// approved (or All: every tool of the catalog), the credential scopes named
// and the expiry (ExpiresRunEnds, ExpiresPerCall or a duration).
type Approval struct {
	Tools       []string
	All         bool
	Credentials []string
	Expires     string
}

// Scope returns the tool and credential scopes a grant for approval a
// covers, given the catalog (tool names, in order) of epoch ep, or why no
// grant can be made:
//
//   - All takes every tool of the catalog and adds the credential scopes
//     they use to those named, per-call ones included (such a grant still
//     covers a per-call tool only if a.Expires is per-call; see
//     [Need.CoveredBy]);
//   - otherwise there must be at least one tool, each in the catalog, every
//     credential scope the tools use must be named, and a tool that uses a
//     per-call scope can be approved only per-call.
//
// The credential scopes are sorted. a.Expires is not parsed here (see
// ParseExpiry).
func (p *Policy) Scope(a Approval, ep epoch.Epoch, catalog []string) (tools, creds []string, err error) {
	tools = a.Tools
	if a.All {
		tools = slices.Clone(catalog)
	}
	if len(tools) == 0 {
		return nil, nil, errors.New("no tools named: give --tools or --all")
	}
	var needs []string
	for _, t := range tools {
		if !slices.Contains(catalog, t) {
			return nil, nil, fmt.Errorf("tool %q is not in the current catalog of epoch %s", t, ep)
		}
		scopes, _ := p.Credentials(t)
		for _, s := range scopes {
			if !slices.Contains(a.Credentials, s) && !slices.Contains(needs, s) {
				needs = append(needs, s)
			}
		}
	}
	if len(needs) > 0 && !a.All {
		return nil, nil, fmt.Errorf("the tools use credential scope %v, which the approval does not name: add --credential for each", needs)
	}
	if a.Expires != ExpiresPerCall && !a.All {
		for _, t := range tools {
			if scopes, perCall := p.Credentials(t); perCall {
				return nil, nil, fmt.Errorf("tool %s uses credential scope %v, which needs an approval for each call: approve it with --expires per-call", t, scopes)
			}
		}
	}
	creds = slices.Clone(a.Credentials)
	if a.All {
		creds = append(creds, needs...)
	}
	slices.Sort(creds)
	return tools, creds, nil
}

// Coverage is what a review covers of a catalog: what changed since the
// last approval and what each tool needs. Its JSON members are part of the
// review payload of the local API.
type Coverage struct {
	// CatalogChanges are the catalog's changes since the catalog last approved in
	// this agent run (see DiffCatalogs); never nil.
	CatalogChanges []Change `json:"catalogChanges"`
	// Credentials maps each tool of the catalog that needs a grant to the
	// credential scopes it uses (sorted, possibly empty); never nil.
	Credentials map[string][]string `json:"credentials"`
	// PerCall lists the scopes, sorted, that need an approval per call.
	PerCall []string `json:"perCallScopes,omitempty"`
	// Exempt lists the catalog's tools that need no grant, in catalog order.
	Exempt []string `json:"exemptTools,omitempty"`
}

// Review describes the review of catalog tools (a tools/list "tools"
// array whose names, in order, are names) against approved, the tools of
// the catalog last approved (nil: none yet). Review(nil, nil, nil) is the
// review of a server whose catalog is not known yet: it covers nothing.
func (p *Policy) Review(approved, tools []json.RawMessage, names []string) Coverage {
	c := Coverage{CatalogChanges: DiffCatalogs(approved, tools), Credentials: map[string][]string{}}
	if c.CatalogChanges == nil {
		c.CatalogChanges = []Change{}
	}
	perCall := map[string]bool{}
	for _, name := range names {
		n := p.Need(name)
		if n.Exempt {
			c.Exempt = append(c.Exempt, name)
			continue
		}
		c.Credentials[name] = n.Credentials
		if n.PerCall {
			for _, s := range n.Credentials {
				perCall[s] = true
			}
		}
	}
	for s := range perCall {
		c.PerCall = append(c.PerCall, s)
	}
	slices.Sort(c.PerCall)
	return c
}

// Granted returns the tools of the catalog that need a grant, sorted.
func (c Coverage) Granted() []string {
	var out []string
	for name := range c.Credentials {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Scopes returns the credential scopes tools use, each once, in the order
// the tools first use them: what an approval of tools must name.
func (c Coverage) Scopes(tools []string) []string {
	var out []string
	for _, t := range tools {
		for _, s := range c.Credentials[t] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// PerCallScopes returns the per-call credential scopes tools use, sorted.
func (c Coverage) PerCallScopes(tools []string) []string {
	var out []string
	for _, s := range c.Scopes(tools) {
		if slices.Contains(c.PerCall, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// PerCallTools returns the tools, of tools, that use a per-call credential
// scope: a grant that is not per-call does not cover their calls.
func (c Coverage) PerCallTools(tools []string) []string {
	var out []string
	for _, t := range tools {
		if len(c.PerCallScopes([]string{t})) > 0 {
			out = append(out, t)
		}
	}
	return out
}
