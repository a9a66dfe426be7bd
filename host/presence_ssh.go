package host

import (
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// Presence through an OpenSSH FIDO key (mcpepoch approve --ssh KEY): the
// host proposes (propose_ssh), the person's key signs the digest with
// ssh-keygen -Y sign -n mcpepoch-grant@v1, a touch, and the host verifies
// the SSHSIG (package sshsig: an enrolled sk key, the user-presence flag, a
// growing counter) before it makes the grant of what it proves
// (approval.SSH, the ssh channel's rule; approve_ssh). A signature by a
// key that is not an sk key never counts.

// sshProposalTTL is how long a proposal waits for its signature.
const sshProposalTTL = 10 * time.Minute

// sshProposal is a proposal waiting for an ssh signature.
type sshProposal struct {
	req      ApproveRequest
	proposal *grant.Proposal
	digest   grant.Digest
	at       time.Time
}

// proposeSSH returns the digest an ssh key must sign to approve req.
func (h *Host) proposeSSH(req ApproveRequest) (localapi.WebApproval, error) {
	p, cr, req, err := h.propose(req)
	if err != nil {
		return localapi.WebApproval{}, err
	}
	now := time.Now()
	h.pres.mu.Lock()
	for d, sp := range h.pres.ssh {
		if now.Sub(sp.at) > sshProposalTTL {
			delete(h.pres.ssh, d)
		}
	}
	if len(h.pres.ssh) >= maxPendingApprovals {
		delete(h.pres.ssh, oldestKey(h.pres.ssh, func(sp *sshProposal) time.Time { return sp.at }))
	}
	h.pres.ssh[cr.Digest.String()] = &sshProposal{req: req, proposal: p, digest: cr.Digest, at: now}
	h.pres.mu.Unlock()
	return localapi.WebApproval{Digest: cr.Digest.String(), ShortCode: cr.Digest.ShortCode(), Proposal: p}, nil
}

// approveSSH verifies r's signature over its proposal and makes the grant;
// every refusal is audited.
func (h *Host) approveSSH(peer notify.Peer, r localapi.SSHApproveRequest) (*grant.Grant, error) {
	h.pres.mu.Lock()
	sp := h.pres.ssh[r.Digest]
	delete(h.pres.ssh, r.Digest) // one attempt per proposal
	h.pres.mu.Unlock()
	if sp == nil || time.Since(sp.at) > sshProposalTTL {
		return nil, fmt.Errorf("no pending proposal with digest %s at this host: propose again", r.Digest)
	}
	g, authenticator, err := h.verifySSH(peer, sp, r.Signature)
	if err != nil {
		h.audit.event(audit.TypeApprovalRefused, sp.req.Epoch, h.run, map[string]any{
			"channel": approval.ChannelSSH, "proof": string(approval.ProofPresence), "authenticator": authenticator,
			"signed_digest": sp.digest.String(), "reason": err.Error()})
	}
	return g, err
}

// verifySSH checks the signature (sshsig, against the pinned trust
// store), records its counter in the trust store and makes the grant of
// what it proves (approval.SSH). It returns the authenticator that
// signed, once verified, for the refusal's audit record.
func (h *Host) verifySSH(peer notify.Peer, sp *sshProposal, signature string) (*grant.Grant, string, error) {
	if err := h.checkPinned(); err != nil {
		return nil, "", err
	}
	store, err := trust.Open(h.pres.dir)
	if err != nil {
		return nil, "", fmt.Errorf("the trust store cannot be read: %v", err)
	}
	p, err := sshsig.VerifyPresence(store, []byte(signature), sp.digest, sshsig.GrantNamespace, false)
	if err != nil {
		return nil, "", err
	}
	if err := store.RecordUse(p.AuthenticatorID, p.SignCount); err != nil {
		return nil, p.AuthenticatorID, err
	}
	pr := approval.SSH(sp.digest.String(), signature, p.AuthenticatorID, p.SignCount)
	g, err := h.grantFor(peer, sp.req, proven{Proven: pr, proposal: sp.proposal})
	return g, p.AuthenticatorID, err
}
