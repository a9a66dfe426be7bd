package approval

import (
	"slices"
	"time"
)

// Renewals: what a renewal offers of what ended grants covered.
//
// A grant ends with its epoch (or when a stricter policy no longer counts
// it); what the person approved does not have to be asked from scratch.
// A host keeps what the ended grants covered (Covered) and, once the new
// catalog is known, offers a renewal of it (Covered.Offer):
//
//   - a tool whose definition is the one approved, and whose credential
//     scopes the ended grants all named, is pre-selected;
//   - a tool whose definition changed, or that uses a scope they did not
//     name, is offered but not pre-selected: a person includes it;
//   - a tool new since the last approval is offered too, never
//     pre-selected: the person never approved it;
//   - a tool no longer offered is dropped, and said so;
//   - a tool exempt now, or that needs a decision per call, is not
//     renewed: no grant of this kind covers it; nor is a per-call grant
//     (one call each), which the host never adds;
//   - the expiry is the shortest duration of the ended grants over the
//     pre-selected tools, counted again from the new approval, else the
//     agent run's end.
//
// A renewal is a review like any other: approving it takes the proof its
// credential scopes need (the proof list, rules.go), through a channel of
// this package, nothing less.

// Covered is what the ended grants of one renewal covered.
type Covered struct {
	Tools       []string                 // sorted
	Credentials []string                 // sorted
	Definitions map[string]string        // tool → the definition digest the person reviewed
	Expiry      map[string]time.Duration // tool → the shortest duration of its grants; absent: the agent run's end
}

// Add puts in c what one ended grant covered: its tools and credential
// scopes, the definitions reviewed (grant.Grant.Definitions) and its
// expiry (a duration, or the agent run's end).
func (c *Covered) Add(tools, creds []string, defs map[string]string, expires string) {
	if c.Definitions == nil {
		c.Definitions, c.Expiry = map[string]string{}, map[string]time.Duration{}
	}
	for _, t := range tools {
		if !slices.Contains(c.Tools, t) {
			c.Tools = append(c.Tools, t)
		}
		if d, ok := defs[t]; ok {
			c.Definitions[t] = d
		}
		if d, err := time.ParseDuration(expires); err == nil && (c.Expiry[t] == 0 || d < c.Expiry[t]) {
			c.Expiry[t] = d
		}
	}
	for _, s := range creds {
		if !slices.Contains(c.Credentials, s) {
			c.Credentials = append(c.Credentials, s)
		}
	}
	slices.Sort(c.Tools)
	slices.Sort(c.Credentials)
}

// Offered is a tool of the running catalog as a renewal weighs it.
type Offered struct {
	Definition  string   // the digest of its current definition
	Credentials []string // the credential scopes it uses (grant.Policy.Credentials), sorted
	PerCall     bool     // one of them needs a decision per call
	Exempt      bool     // it needs no grant (grants.exempt)
	New         bool     // it is new since the last approval (a tool_added change)
}

// Offer is what a renewal offers.
type Offer struct {
	Tools       []string      // pre-selected, sorted
	Credentials []string      // the scopes the pre-selected tools use, sorted
	Changed     []string      // covered, offered, changed: not pre-selected (sorted)
	Added       []string      // new since the last approval, not covered: not pre-selected (sorted)
	Dropped     []string      // covered, no longer offered (sorted)
	Expires     time.Duration // 0: the agent run's end
}

// Offer returns what a renewal of c offers on the running catalog (by
// the rules above). catalog need hold only c's tools and the tools new
// since the last approval: a tool absent from it is not offered.
func (c *Covered) Offer(catalog map[string]Offered) Offer {
	var o Offer
	for _, name := range c.Tools {
		t, offered := catalog[name]
		switch {
		case !offered:
			o.Dropped = append(o.Dropped, name)
		case t.Exempt || t.PerCall:
			// no grant of this kind covers it
		case c.Definitions[name] != t.Definition || !subset(t.Credentials, c.Credentials):
			o.Changed = append(o.Changed, name)
		default:
			o.Tools = append(o.Tools, name)
			for _, s := range t.Credentials {
				if !slices.Contains(o.Credentials, s) {
					o.Credentials = append(o.Credentials, s)
				}
			}
			if d := c.Expiry[name]; d > 0 && (o.Expires == 0 || d < o.Expires) {
				o.Expires = d
			}
		}
	}
	for name, t := range catalog {
		if t.New && !t.Exempt && !t.PerCall && !slices.Contains(c.Tools, name) {
			o.Added = append(o.Added, name)
		}
	}
	slices.Sort(o.Added)
	slices.Sort(o.Credentials)
	return o
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}
