package host

import (
	"errors"
	"fmt"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// checkAcceptance reports why the floor f, whose file says a person
// accepted it, cannot replace the floor held, or nil when it can: its
// acceptance names exactly held as the floor it replaces, at a level held
// counts (trust.Floor.CheckAcceptance), and an acceptance of proof
// presence is an SSHSIG over trust.AcceptDigest(held, f, nonce) in
// trust.PolicyNamespace, with user presence, by an ssh authenticator of
// the trust store pinned at start, attested where held or the policy in
// force has grants.attestation = "required". A terminal or same-user
// acceptance is as strong as that level: nothing in the file can prove
// more.
func (h *Host) checkAcceptance(held, f trust.Floor) error {
	counts := proofList(held.Proof, h.enrolled)
	if err := f.CheckAcceptance(held, counts.Counts); err != nil {
		return err
	}
	a := f.Accepted
	if a.Proof != string(grant.ProofPresence) {
		return nil
	}
	if a.Channel != "ssh" {
		return fmt.Errorf("its acceptance of proof presence came through channel %q, which a host cannot check", a.Channel)
	}
	store := h.pres.pinnedStore
	if store == nil {
		return errors.New("the trust store could not be read at start: no presence can be verified")
	}
	p, err := sshsig.VerifyPresence(store, []byte(a.Signature), trust.AcceptDigest(held, f, a.Nonce), trust.PolicyNamespace, false)
	if err != nil {
		return fmt.Errorf("its signature does not verify against the trust store the host pinned: %v", err)
	}
	if p.AuthenticatorID != a.Authenticator {
		return fmt.Errorf("it names authenticator %s but was signed by %s", a.Authenticator, p.AuthenticatorID)
	}
	h.mu.Lock()
	required := held.Attestation == config.AttestationRequired || h.policy.AttestationRequired()
	h.mu.Unlock()
	if required {
		if auth, ok := store.Lookup(p.AuthenticatorID); !ok || !auth.Attestation().OK {
			v := "not enrolled"
			if ok {
				v = auth.Attestation().String()
			}
			return fmt.Errorf("it was signed by %s, which is %s, and the floor held has attestation = %q", p.AuthenticatorID, v, config.AttestationRequired)
		}
	}
	return nil
}

// refuseFloorLocked logs and audits (policy_floor_refused) the floor file
// holding f, which says a person accepted it but why says it cannot
// replace the floor held, once per file content; the floor held stays in
// force.
func (h *Host) refuseFloorLocked(f trust.Floor, why error) {
	path, digest := h.floorPin()
	if digest == h.floor.refused {
		return
	}
	h.floor.refused = digest
	h.audit.event(audit.TypePolicyFloorRefused, h.epochLocked(), h.run, map[string]any{
		"path": path, "floor_digest": digest, "updated_by": f.UpdatedBy, "why": why.Error(),
	})
	h.logf("policy floor: %s says a person accepted it, but %v: not taken; the floor in force stays %s", path, why, floorText(*h.floor.floor, h.enrolled))
}

// proofList is a proof list as the floor keeps it (nil: the default,
// grant.DefaultProof).
func proofList(l []string, enrolled bool) grant.Proofs {
	if l == nil {
		return grant.DefaultProof(enrolled)
	}
	return grant.Proofs(toProofList(l))
}
