package host

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// checkAcceptance reports why the floor f, whose file says a person
// accepted it, cannot replace the floor held, or nil when it can: its
// acceptance names exactly held as the floor it replaces, at a level held
// counts for any change of it (trust.Floor.AcceptanceProof: grants.proof
// made stricter by every credential scope's proof; CheckAcceptance), and an acceptance of proof
// presence is a signature over trust.AcceptDigest(held, f, nonce) by an
// authenticator of the trust store pinned at start (acceptanceSigner), attested where held or the policy in
// force has grants.attestation = "required". A terminal or same-user
// acceptance is as strong as that level: nothing in the file can prove
// more.
func (h *Host) checkAcceptance(held, f trust.Floor) error {
	counts := held.AcceptanceProof(h.enrolled)
	if err := f.CheckAcceptance(held, counts.Counts); err != nil {
		return err
	}
	a := f.Accepted
	if a.Proof != string(approval.ProofPresence) {
		return nil
	}
	store := h.pres.pinnedStore
	if store == nil {
		return errors.New("the trust store could not be read at start: no presence can be verified")
	}
	id, err := acceptanceSigner(store, held, f)
	if err != nil {
		return err
	}
	h.mu.Lock()
	required := held.Attestation == config.AttestationRequired || h.policy.AttestationRequired()
	h.mu.Unlock()
	if required {
		if auth, ok := store.Lookup(id); !ok || !auth.Attestation().OK {
			v := "not enrolled"
			if ok {
				v = auth.Attestation().String()
			}
			return fmt.Errorf("it was signed by %s, which is %s, and the floor held has attestation = %q", id, v, config.AttestationRequired)
		}
	}
	return nil
}

// acceptanceSigner verifies the presence signature of f's acceptance
// over trust.AcceptDigest(held, f, nonce) against store and returns the
// signer's id: an SSHSIG in trust.PolicyNamespace with user presence by an
// ssh authenticator (channel "ssh", policy accept --ssh), or a WebAuthn
// assertion by a WebAuthn authenticator (channel "web", policy accept
// --web), each the one the acceptance names.
func acceptanceSigner(store *trust.Store, held, f trust.Floor) (string, error) {
	a := f.Accepted
	d := trust.AcceptDigest(held, f, a.Nonce)
	switch a.Channel {
	case "ssh":
		p, err := sshsig.VerifyPresence(store, []byte(a.Signature), d, trust.PolicyNamespace, false)
		if err != nil {
			return "", fmt.Errorf("its signature does not verify against the trust store the host pinned: %v", err)
		}
		if p.AuthenticatorID != a.Authenticator {
			return "", fmt.Errorf("it names authenticator %s but was signed by %s", a.Authenticator, p.AuthenticatorID)
		}
		return p.AuthenticatorID, nil
	case "web":
		auth, ok := store.Lookup(a.Authenticator)
		if !ok || auth.Kind != trust.KindWebAuthn {
			return "", fmt.Errorf("its signature does not verify against the trust store the host pinned: %s is none of its WebAuthn authenticators", a.Authenticator)
		}
		if err := trust.VerifyAcceptanceAssertion(auth, a.WebAuthn, d); err != nil {
			return "", fmt.Errorf("its signature does not verify against the trust store the host pinned: %v", err)
		}
		return a.Authenticator, nil
	}
	return "", fmt.Errorf("its acceptance of proof presence came through channel %q, which a host cannot check", a.Channel)
}

// refuseFloorLocked refuses the floor file holding f, whose acceptance
// why says does not hold against the floor held: it logs it in one line
// and audits it (policy_floor_refused, with the file's path, digest and
// content), once per file content, and writes the floor held back into
// the file (updatedBy "restored"), so that policy show and policy accept
// work from the floor in force again. The floor held stays in force.
func (h *Host) refuseFloorLocked(f trust.Floor, why error) {
	path, digest := h.floorPin()
	if digest == h.floor.refused {
		return
	}
	h.floor.refused = digest
	rec := map[string]any{"path": path, "floor_digest": digest, "updated_by": f.UpdatedBy, "why": why.Error(), "floor": f}
	if h.audit != nil {
		h.audit.event(audit.TypePolicyFloorRefused, h.epochLocked(), h.run, rec)
	} else {
		h.floor.refusedAtStart = rec // audited with trust_pinned, once the log is open
	}
	h.logf("policy floor: %s was refused (%v): the floor in force stays %s; only "+selfcmd.Name()+" policy accept, by a person, weakens it",
		path, why, floor.Text(*h.floor.floor, h.enrolled))
	unlock, err := trust.LockFloors(h.pres.dir)
	if err != nil {
		h.logf("%v", err)
		return
	}
	defer unlock()
	if floor.FileDigest(path) != digest {
		return // written again since, by policy accept or another host: left to the next read
	}
	held := *h.floor.floor
	if err := trust.WriteFloor(h.pres.dir, &held, "restored", time.Now()); err != nil {
		h.logf("policy floor: %v", err)
		return
	}
	h.floor.floor = &held
	h.floorHeldLocked()
}

// floorHeldLocked records, once the audit log is open, the floor held
// after it changed while the host runs (policy_floor_held): the floor a
// later host start checks the file it finds against (checkStartFloor). At
// start trust_pinned records it.
func (h *Host) floorHeldLocked() {
	if h.audit == nil || h.floor.floor == nil || !h.floor.save {
		return
	}
	f := *h.floor.floor
	h.audit.event(audit.TypePolicyFloorHeld, h.epochLocked(), h.run, map[string]any{
		"floor": f, "digest": f.Digest().String(), "by": f.UpdatedBy,
	})
}

// checkStartFloor checks the floor file f a host found at start against
// the last floor the project's audit log says a host held (trust_pinned,
// policy_floor_held): a file weaker than that in any setting, written
// while no host ran, is taken only when it carries an acceptance that
// holds against that floor (checkAcceptance). Otherwise it is refused as
// while running (refuseFloorLocked) and that floor is held. It returns the
// floor to hold. A log with no such record (or none) leaves f as found.
// Runs before any goroutine.
func (h *Host) checkStartFloor(f *trust.Floor) *trust.Floor {
	last := h.floor.heldAtStart
	if !h.floor.heldRead {
		last = floor.LastHeld(h.opts.Dir)
	}
	if last == nil || last.Root != f.Root || last.Digest() == f.Digest() {
		return f
	}
	weak := f.WeakerThan(*last, h.enrolled)
	if len(weak) == 0 {
		return f
	}
	why := h.checkAcceptance(*last, *f)
	if why == nil {
		h.logf("policy floor: accepted by a person (%s, %s) while no host ran: %s", strings.TrimPrefix(f.UpdatedBy, trust.AcceptedBy),
			f.UpdatedAt.Local().Format(time.DateTime), floor.Text(*f, h.enrolled))
		return f
	}
	if !strings.HasPrefix(f.UpdatedBy, trust.AcceptedBy) {
		s := make([]string, len(weak))
		for i, w := range weak {
			s[i] = w.Setting
		}
		why = fmt.Errorf("it is weaker than the floor the last host held (%s) and no person accepted it", strings.Join(s, ", "))
	}
	h.floor.floor = last
	h.refuseFloorLocked(*f, why)
	return h.floor.floor
}
