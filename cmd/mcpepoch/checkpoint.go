package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// Signed checkpoints: a presence-signed approval (approval_granted with
// proof presence) records the grant proposal its authenticator signed,
// and the proposal covers the audit log's head when it was made. audit
// verify rebuilds the proposal from the record, checks that its digest is
// the signed one and that the record at the head's seq has the head's
// hash, and, for an SSHSIG, verifies the signature against the trust
// store. Rewriting the log before such an approval, even with a hash chain
// made anew, changes that record's hash and is found; forging the approval
// record too needs the authenticator. A WebAuthn approval's assertion is
// not kept in the log: its checkpoint is checked for consistency only.
//
// Every presence-proved approval was made over a proposal, so every such
// record carries a checkpoint: one without (its audit_head_seq,
// audit_head_hash, nonce or signed_digest removed or malformed) is a
// problem, exit status 5, never a record to skip: stripping the fields
// would otherwise take the record out of the check.

// checkpoints checks recs (the whole log, in order) and returns how many
// checkpoints were checked, the problems, and notes.
func checkpoints(recs []audit.Record) (n int, problems, notes []string) {
	bySeq := map[int64]audit.Record{}
	for _, r := range recs {
		bySeq[r.Seq] = r
	}
	var store *trust.Store
	var storeErr error
	if dir, err := trust.DefaultDir(); err != nil {
		storeErr = err
	} else {
		store, storeErr = trust.Open(dir)
	}
	for _, r := range recs {
		f := r.Fields
		if r.Type != audit.TypeApprovalGranted || f["proof"] != string(approval.ProofPresence) {
			continue
		}
		n++
		if missing := missingCheckpoint(f); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("seq %d: approval_granted with proof presence has no signed checkpoint (no %s): a presence approval always records the proposal it signed, so the record was stripped or forged",
				r.Seq, strings.Join(missing, ", ")))
			continue
		}
		p, err := proposalOf(r)
		if err != nil {
			problems = append(problems, fmt.Sprintf("seq %d: approval_granted: signed checkpoint: %v", r.Seq, err))
			continue
		}
		d, err := p.Digest()
		if err != nil || d.String() != f["signed_digest"] {
			problems = append(problems, fmt.Sprintf("seq %d: approval_granted: the proposal it records does not have the signed digest %v", r.Seq, f["signed_digest"]))
			continue
		}
		if h := p.AuditHead; h.Seq > 0 {
			at, ok := bySeq[h.Seq]
			if !ok || at.Hash != h.Hash || h.Seq >= r.Seq {
				problems = append(problems, fmt.Sprintf("seq %d: signed checkpoint: record %d should have hash %s (found %q): the log before this approval was rewritten", r.Seq, h.Seq, h.Hash, at.Hash))
				continue
			}
		}
		sig, _ := f["signature"].(string)
		switch {
		case sig == "":
			notes = append(notes, fmt.Sprintf("seq %d: checkpoint of a %v approval: checked for consistency (its signature is not kept in the log)", r.Seq, f["channel"]))
		case storeErr != nil:
			notes = append(notes, fmt.Sprintf("seq %d: the signature cannot be checked: trust store: %v", r.Seq, storeErr))
		default:
			if _, err := sshsig.VerifyPresence(store, []byte(sig), d, sshsig.GrantNamespace, false); err != nil {
				problems = append(problems, fmt.Sprintf("seq %d: signed checkpoint: signature: %v", r.Seq, err))
			}
		}
	}
	return n, problems, notes
}

// checkpointFields are the members of a presence approval's signed
// checkpoint (host grantFor writes them with the proposal).
var checkpointFields = []string{"audit_head_seq", "audit_head_hash", "nonce", "signed_digest", "catalog_revision"}

// missingCheckpoint returns the checkpoint members f lacks or holds as
// anything but a non-empty string.
func missingCheckpoint(f map[string]any) []string {
	var out []string
	for _, k := range checkpointFields {
		if s, ok := f[k].(string); !ok || s == "" {
			out = append(out, k)
		}
	}
	return out
}

// proposalOf rebuilds the proposal an approval_granted record describes.
func proposalOf(r audit.Record) (*grant.Proposal, error) {
	f := r.Fields
	str := func(k string) string { s, _ := f[k].(string); return s }
	list := func(k string) []string {
		out := []string{}
		l, _ := f[k].([]any)
		for _, v := range l {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	seq, err := strconv.ParseInt(str("audit_head_seq"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("audit_head_seq %q: %v", str("audit_head_seq"), err)
	}
	p := &grant.Proposal{V: grant.ProposalVersion, AgentRun: r.Run, ExecutionEpoch: epoch.Epoch(r.Epoch),
		CatalogRevision: str("catalog_revision"), ToolScope: list("tool_scope"), CredentialScope: list("credential_scope"),
		ExpiresWhen: str("expires_when"), Nonce: str("nonce"), AuditHead: grant.AuditHead{Seq: seq, Hash: str("audit_head_hash")}}
	return p, p.Check()
}

// verifyCheckpoints runs checkpoints over recs, the records of the log at
// path that verified; a problem is exit status 5, as a broken chain.
func verifyCheckpoints(path string, recs []audit.Record, stdio Stdio) error {
	n, problems, notes := checkpoints(recs)
	for _, s := range notes {
		fmt.Fprintf(stdio.Out, "note: %s\n", s)
	}
	for _, s := range problems {
		fmt.Fprintln(stdio.Out, s)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stdio.Out, "%s: %d of %d signed checkpoint(s) do not hold\n", path, len(problems), n)
		return silentExit(exitAuditBroken)
	}
	return nil
}
