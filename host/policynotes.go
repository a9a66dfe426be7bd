package host

import "github.com/mcpepoch/mcpepoch/floor"

// noAuthenticatorLocked returns floor.NoAuthenticatorNote when the policy in
// force counts only presence and the store the host pinned holds no
// authenticator, else "". An unreadable store is said at start already.
func (h *Host) noAuthenticatorLocked() string {
	s := h.pres.pinnedStore
	if s == nil || len(s.Authenticators) > 0 || h.policy == nil || !floor.OnlyPresence(h.policy.Proof(nil, h.enrolled)) {
		return ""
	}
	return floor.NoAuthenticatorNote()
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
