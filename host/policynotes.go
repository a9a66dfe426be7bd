package host

import (
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// NoAuthenticatorNote is the one line said wherever the policy in force
// counts only presence while the trust store holds no authenticator: the
// host's log, record and dev (the build answer's Policy lines), doctor.
// A first enrollment needs a person at their own terminal (enroll's first
// enrollment rule); the host pins the store at start, so it counts the
// new authenticator once it starts again.
func NoAuthenticatorNote() string {
	return "proof = presence but no authenticator is enrolled: every approval will be refused; " +
		"enroll one with " + selfcmd.Name() + " enroll --ssh KEY.pub (or --web) at your own terminal, a first enrollment, and start the host again"
}

// OnlyPresence reports whether the proof list p counts presence and no
// other level.
func OnlyPresence(p grant.Proofs) bool {
	for _, l := range p {
		if l != grant.ProofPresence {
			return false
		}
	}
	return len(p) > 0
}

// noAuthenticatorLocked returns NoAuthenticatorNote when the policy in
// force counts only presence and the store the host pinned holds no
// authenticator, else "". An unreadable store is said at start already.
func (h *Host) noAuthenticatorLocked() string {
	s := h.pres.pinnedStore
	if s == nil || len(s.Authenticators) > 0 || h.policy == nil || !OnlyPresence(h.policy.Proof(nil, h.enrolled)) {
		return ""
	}
	return NoAuthenticatorNote()
}

// policyLinesLocked is what a build answer (notify.Response.Policy) says
// of the project's policy, one plain line each: the floor or trust root
// gone missing, the weakenings of mcpepoch.toml not applied (with how a
// person accepts them), presence with nothing enrolled.
func (h *Host) policyLinesLocked() []string {
	var out []string
	if h.floor.missing != "" {
		out = append(out, h.floor.missing)
	}
	if len(h.floor.weak) > 0 {
		out = append(out, h.weakNoteLocked(h.floor.weak))
	}
	if n := h.noAuthenticatorLocked(); n != "" {
		out = append(out, n)
	}
	return out
}
