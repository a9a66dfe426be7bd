// Package localapi is the host's local API as both sides see it: the request
// type names, the payloads of requests and responses, the error codes a host
// answers with, the restart outcome, and the dispatch table in which every
// request type declares who may send it.
//
// The framing (one JSON line per message, "v", size limits, the socket and
// its peer-credential check) belongs to package notify; this package gives
// its Request and Response their meaning (the build hook's part of it,
// build_complete, build_failed, trees and the restart outcome, in
// hook.go and trees.go). A host registers one handler per request type on a [Mux] built from [Routes]; a client (mcpepoch status,
// record, approve …) reads the same names and payload types from here, so
// the command line never needs the gateway's package to speak to it. The
// split follows tailscale's client/tailscale/apitype (wire types) and
// ipn/localapi (the server's routes).
//
// # Requests
//
//	type            sent by                    payload in → out
//	build_complete  mcpepoch record             Build, Manifest, ExitCode → an [Outcome]
//	build_failed    mcpepoch record             ExitCode → unchanged
//	restart         mcpepoch restart            – → an [Outcome]
//	status          mcpepoch status, grants     – → [Status]
//	review          mcpepoch approve            – → [Review]
//	approve         mcpepoch approve            [ApproveRequest] → grant.Grant
//	approve_web     mcpepoch approve --web      [ApproveRequest] → [WebApproval]
//	approve_wait    mcpepoch approve --web      [WaitRequest] → grant.Grant
//	propose_ssh     mcpepoch approve --ssh      [ApproveRequest] → [WebApproval]
//	approve_ssh     mcpepoch approve --ssh      [SSHApproveRequest] → grant.Grant
//	revoke          mcpepoch revoke             [RevokeRequest] → grant.Grant
//	grants          mcpepoch grants             – → []grant.Grant
//	trees           mcpepoch record             – → [Trees]
//
// notify's listener has already refused any peer of another uid. approve
// is [PermitPerson]: the Mux runs the host's proof check on its sender
// (package approval's terminal rule) and hands the handler what it
// proved; every other route is [PermitSameUser], and [Routes] says why
// on its row (revoke included: it only narrows access).
package localapi

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/oklog/ulid/v2"

	"github.com/mcpepoch/mcpepoch/notify"
)

// Request types: the values of notify.Request.Type a host serves.
const (
	// TypeRestart asks a host to start its server under a new epoch now,
	// whether or not the identity changed (mcpepoch restart); the answer is
	// [OutcomeRestarted] or an error.
	TypeRestart = "restart"
	// TypeStatus asks a host for its current state; the answer has the same
	// type and carries a [Status] in Payload.
	TypeStatus = "status"
	// TypeReview asks a host for what a person must see before approving:
	// the answer (TypeReview) carries a [Review] in Payload.
	TypeReview = "review"
	// TypeApprove records a person's approval (Payload: [ApproveRequest]);
	// the answer (TypeApprove) carries the new grant.Grant in Payload.
	TypeApprove = "approve"
	// TypeApproveWeb opens an approval page for what the Payload
	// ([ApproveRequest]) asks; the answer (TypeApproveWeb) carries a
	// [WebApproval]. A grant is made only once an enrolled authenticator
	// signed its digest on that page (proof presence).
	TypeApproveWeb = "approve_web"
	// TypeApproveWait waits (up to about 20 s) for the decision of a page
	// opened by TypeApproveWeb (Payload: [WaitRequest]); the answer
	// (TypeApproveWait) carries the new grant.Grant, or is an error:
	// [CodePending] while undecided, [CodeApprovalRefused] when declined
	// or refused.
	TypeApproveWait = "approve_wait"
	// TypeProposeSSH asks for the grant digest of what the Payload
	// ([ApproveRequest]) asks, for an ssh key to sign; the answer
	// (TypeProposeSSH) carries a [WebApproval] without URL. The proposal
	// is good for one [TypeApproveSSH], for 10 minutes; a host keeps its
	// newest 64 proposals, and its newest 64 approval pages.
	TypeProposeSSH = "propose_ssh"
	// TypeApproveSSH makes the grant of a proposal whose digest an
	// enrolled FIDO ssh key signed with user presence (Payload:
	// [SSHApproveRequest]); the answer (TypeApproveSSH) carries the
	// grant.Grant.
	TypeApproveSSH = "approve_ssh"
	// TypeRevoke ends a grant (Payload: [RevokeRequest]); the answer
	// (TypeRevoke) carries the revoked grant.Grant in Payload.
	TypeRevoke = "revoke"
	// TypeGrants asks a host which grants it holds live: the answer
	// (TypeGrants) carries them, a []grant.Grant, in Payload. mcpepoch
	// grants shows a grant from a grants file as live only when its host
	// vouches for it this way: the file is the host's record, not its
	// word, and may have been edited or rolled back.
	TypeGrants = "grants"
)

// Error codes a host's handlers answer with, beside notify's framing codes
// (notify.CodeBadRequest, notify.CodeForbidden, notify.CodeUnknownType …).
const (
	// CodeApprovalRefused: the host refused an approval (the reviewed
	// epoch or catalog is no longer the running one, an unknown tool …).
	CodeApprovalRefused = "approval_refused"
	// CodePending: the approval page is not decided yet; ask again.
	CodePending = "pending"
	// CodeNotFound: a revoke named no live grant of this host.
	CodeNotFound = "not_found"
)

// checkBuild is the shape check of a TypeBuildComplete request: Build is a
// canonical ULID and Manifest an absolute, clean path. The error names the
// offending field.
func checkBuild(r notify.Request) error {
	if r.Build == "" {
		return errors.New(`missing field "build"`)
	}
	if id, err := ulid.ParseStrict(r.Build); err != nil || id.String() != r.Build {
		return fmt.Errorf(`field "build": %q is not a ULID`, r.Build)
	}
	if r.Manifest == "" {
		return errors.New(`missing field "manifest"`)
	}
	if !filepath.IsAbs(r.Manifest) || filepath.Clean(r.Manifest) != r.Manifest {
		return fmt.Errorf(`field "manifest": %q is not an absolute clean path`, r.Manifest)
	}
	return nil
}
