package host

import (
	"fmt"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/mcpepoch/mcpepoch/trust"
)

// openTrust reads the trust store once, at start: whether an authenticator
// is enrolled sets the default proof list (approval.DefaultProof), and its
// Digest is pinned (presence.go checkPinned). A store
// that cannot be read (a wrong owner or mode, a corrupt file) counts as
// enrolled, so the default is the strictest: no approval counts until it
// is fixed, rather than a weaker one. With the default directory, a
// variable of the environment that would have named another config or
// state directory is said once (userdirs.Note): it is not followed.
func (h *Host) openTrust() {
	dir := h.opts.TrustDir
	if dir == "" {
		if n := userdirs.Note(); n != "" {
			h.logf("%s", n)
		}
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
		h.pres.openErr = err
		h.logf("trust store: %v: the default proof is presence, and no presence can be verified until it is fixed", err)
		h.enrolled = true
		return
	}
	h.enrolled = len(s.Authenticators) > 0
	h.pres.pinned = s.Digest()
	h.pres.pinnedStore = s
	if r := s.Root(); r != nil {
		h.logf("trust store: root %s %q (%s), %s", r.Kind, r.Name, r.ID, rootNote(r))
	}
}

// rootNote says how a root was enrolled and whether it is attested, with
// the plain warning when it is not.
func rootNote(r *trust.Authenticator) string {
	how := "enrolled " + orUnknown(r.Enrolled)
	if v := r.Attestation(); v.OK {
		return how + ", " + v.String()
	}
	return how + ", unattested: " + trust.UnattestedWarning
}

func orUnknown(s string) string {
	if s == "" {
		return "(how not recorded)"
	}
	return "at a " + s
}

// checkAttestedLocked refuses a presence approval, under grants.attestation
// = "required", by an authenticator of the pinned store whose FIDO
// attestation does not verify (trust.Authenticator.Attestation): the root
// included, so a key made in software never proves presence there. The
// caller audits the refusal.
func (h *Host) checkAttestedLocked(pr approval.Proven) error {
	if pr.Proof != approval.ProofPresence || !h.policy.AttestationRequired() {
		return nil
	}
	var a *trust.Authenticator
	if s := h.pres.pinnedStore; s != nil {
		a, _ = s.Lookup(pr.Authenticator)
	}
	if a == nil {
		return fmt.Errorf("authenticator %s is not in the trust store the host pinned", pr.Authenticator)
	}
	if v := a.Attestation(); !v.OK {
		return fmt.Errorf("authenticator %q (%s) is %s, and this project's [grants] attestation = %q counts only attested authenticators as presence: approve with an attested security key",
			a.Name, a.ID, v, config.AttestationRequired)
	}
	return nil
}

// auditPinnedLocked writes the trust_pinned record of the store openTrust
// pinned: its digest, number of entries, and the root (id, kind, name, how
// it was enrolled, attested or not), so that the log shows which root
// every later presence approval rests on. A store that could not be read
// is recorded with its error.
func (h *Host) auditPinnedLocked(readErr error) {
	f := map[string]any{"path": h.pres.dir}
	if s := h.pres.pinnedStore; s != nil {
		f["path"], f["store_digest"], f["entries"] = s.Path(), s.Digest(), len(s.Authenticators)
		if r := s.Root(); r != nil {
			v := r.Attestation()
			f["root"] = map[string]any{"id": r.ID, "kind": r.Kind, "name": r.Name, "enrolled": r.Enrolled,
				"attested": v.OK, "attestation_format": v.Format, "attestation_root": v.Root, "aaguid": v.AAGUID, "why": v.Why}
		}
	}
	if readErr != nil {
		f["error"] = readErr.Error()
	}
	if path, digest := h.floorPin(); path != "" {
		f["floor_path"], f["floor_digest"] = path, digest
	}
	if h.floor.floor != nil && h.floor.save {
		// The floor held, as the next start checks its file against
		// (checkStartFloor); not the strictest one held for a file
		// missing or damaged.
		f["floor"] = *h.floor.floor
	}
	h.audit.event(audit.TypeTrustPinned, "", h.run, f)
	if r := h.floor.refusedAtStart; r != nil {
		h.audit.event(audit.TypePolicyFloorRefused, "", h.run, r)
		h.floor.refusedAtStart = nil
	}
	h.auditMissingLocked()
}
