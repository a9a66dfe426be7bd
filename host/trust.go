package host

import (
	"github.com/mcpepoch/mcpepoch/trust"
)

// openTrust reads the trust store once, at start: whether an authenticator
// is enrolled sets the default proof list (grant.DefaultProof), and its
// Digest is pinned (presence.go checkPinned). A store
// that cannot be read (a wrong owner or mode, a corrupt file) counts as
// enrolled, so the default is the strictest: no approval counts until it
// is fixed, rather than a weaker one.
func (h *Host) openTrust() {
	dir := h.opts.TrustDir
	if dir == "" {
		d, err := trust.DefaultDir()
		if err != nil {
			h.logf("trust store: %v: the default proof is presence", err)
			h.enrolled = true
			return
		}
		dir = d
	}
	h.pres.dir = dir
	s, err := trust.Open(dir)
	if err != nil {
		h.logf("trust store: %v: the default proof is presence, and no presence can be verified until it is fixed", err)
		h.enrolled = true
		return
	}
	h.enrolled = len(s.Authenticators) > 0
	h.pres.pinned = s.Digest()
}
