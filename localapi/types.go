package localapi

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
)

// State is a state of the host's state machine (package host's doc).
type State string

// The host's states.
const (
	StateReady           State = "ready"
	StateIdentityPending State = "identity-pending"
	StateCatalogReady    State = "catalog-ready"
	StateDown            State = "down" // no child: it exited, or could not start
	// StateStarting is what a host in ready shows while its server was
	// sent initialize and has not answered it (status only: the state
	// machine is in ready).
	StateStarting State = "starting"
)

// Mode is what a host does when a build signal finds new code.
type Mode string

// Restart modes (seed: "do not leave the replacement unnoticed", its three
// options).
const (
	// ModeKeep keeps the client's connection and announces the new epoch
	// (notifications/tools/list_changed) before any new call reaches it.
	ModeKeep Mode = "keep"
	// ModeClose stops the server and closes the connection with a message on
	// stderr, so the client reconnects and initializes again.
	ModeClose Mode = "close"
	// ModeManual records the signal and restarts nothing until
	// mcpepoch restart asks.
	ModeManual Mode = "manual"
)

// Revision is a catalog revision: the digest of what the tools say they are,
// "sha256:" and the hex SHA-256 of the RFC 8785 canonical JSON of the tools
// array, in the order the server listed them. It is not a build.Digest of
// code: the same catalog can be served by different code, and the reverse.
type Revision string

// Observed is what the host saw of a running server process from outside
// it, after its first message: on Linux, /proc/<pid>/exe, cmdline and cwd.
// It shows what really runs after a wrapper's exec, and a binary replaced
// on disk under a running process.
type Observed struct {
	Exe        string       `json:"exe"`
	ExeDeleted bool         `json:"exeDeleted,omitempty"` // the image was deleted or replaced on disk
	ExeDigest  build.Digest `json:"exeDigest,omitempty"`  // of the image the process runs, read through /proc
	Cmdline    []string     `json:"cmdline,omitempty"`
	Cwd        string       `json:"cwd,omitempty"`
	At         time.Time    `json:"at"`
}

// ExecutionRecord is the host's record of the running epoch, in the seed's
// shape, kept in .mcpepoch/hosts/<agent run>.json while the host lives and
// shown in [Status].
type ExecutionRecord struct {
	V                int          `json:"v"` // format version, 1
	ServerLabel      string       `json:"serverLabel"`
	LaunchCommand    []string     `json:"launchCommand"`
	EntryDigest      build.Digest `json:"entryDigest"`
	LockfileDigest   build.Digest `json:"lockfileDigest,omitempty"`
	Runtime          string       `json:"runtime"`
	RuntimeDigest    build.Digest `json:"runtimeDigest,omitempty"`
	WorkingDirectory string       `json:"workingDirectory"`
	Epoch            epoch.Epoch  `json:"epoch"`
	ProcessID        int          `json:"processId"`
	StartedAt        time.Time    `json:"startedAt"`
	AgentRun         epoch.RunID  `json:"agentRun"`
}

// Status is the payload of a host's answer to [TypeStatus]: what
// mcpepoch status shows of a host.
type Status struct {
	AgentRun epoch.RunID `json:"agentRun"`
	Label    string      `json:"label"`
	// Root is the project root the host serves, absolute with symlinks
	// resolved (as the policy floor names it: trust.FloorRoot); "" for a
	// host of no project directory. mcpepoch policy accept tells a host
	// of its own project by it.
	Root         string           `json:"root,omitempty"`
	State        State            `json:"state"`
	SinceSeconds float64          `json:"secondsInState"`
	Reason       string           `json:"reason,omitempty"`
	Mode         Mode             `json:"restartMode"`
	HeldRestart  bool             `json:"restartHeld,omitempty"`
	Execution    *ExecutionRecord `json:"execution,omitempty"`
	Catalog      Revision         `json:"catalogRevision,omitempty"`
	Tools        []string         `json:"tools,omitempty"`
	Era          string           `json:"protocolEra,omitempty"`
	Protocol     string           `json:"protocolVersion,omitempty"`
	InFlight     int              `json:"inFlight"`
	Held         int              `json:"held"`
	// Waiting names the tools whose calls of the running epoch were
	// refused or are held for lack of a grant, each once, in the order
	// first asked: what a person has yet to approve (mcpepoch approve
	// lists them with their counts).
	Waiting []string `json:"waitingForApproval,omitempty"`
	Crashes int      `json:"quickCrashes,omitempty"`
	// GaveUp says the host stopped restarting a server that kept exiting;
	// Reason says what brings it back. mcpepoch status exits 4.
	GaveUp bool `json:"gaveUp,omitempty"`
	// LastStderr is the last lines the server that exited on its own
	// wrote to stderr, oldest first, while the host is down after it:
	// what a server says as it fails is why it failed.
	LastStderr []string `json:"lastStderr,omitempty"`
	// Running is what the host observed of the process (Linux only).
	Running *Observed `json:"running,omitempty"`
	// Drift lists every way what runs differs from what was built; empty
	// means running = built as far as the host can see.
	Drift []string `json:"drift"`
	// ConfigChanged, when set, says what of a changed mcpepoch.toml is not
	// in force yet: a file not re-read yet, one that does not load, a
	// [grants] policy waiting for the next epoch, or settings outside
	// [grants] that reach only a new connection.
	ConfigChanged string `json:"configChanged,omitempty"`
	// PolicyNotApplied lists the settings of mcpepoch.toml that would
	// weaken the project's policy floor (package trust, Floor) and are not
	// in force: the floor's value is, until a person accepts the change.
	PolicyNotApplied []PolicyWeakening `json:"policyNotApplied,omitempty"`
	// PolicyFloorMissing, when set, says that this host found no policy
	// floor (or no trust root) where the project's audit log shows an
	// earlier host ran with one: the strictest policy is in force.
	PolicyFloorMissing string `json:"policyFloorMissing,omitempty"`
	// ClientUnknown, when set, says why this host cannot identify the MCP
	// client that launched it (approval.Launch.Unknown): no approval
	// then counts as terminal or client, only an enrolled authenticator's.
	ClientUnknown string `json:"clientUnknown,omitempty"`
	// IdentityUnverified, when set, says that a tree the running epoch's
	// identity hashes changed (a file event) since that identity was
	// computed, and what that means for calls: until the host has computed
	// it again, a call that needs a grant waits, and one that has waited
	// too long is refused authorization_stale (identity_unverified).
	IdentityUnverified string `json:"identityUnverified,omitempty"`
	// AuditUnavailable says why the audit log cannot be written, while it
	// cannot: every tools/call, and every other request the host records
	// (resources/read, prompts/get…), is refused (audit_unavailable)
	// meanwhile.
	AuditUnavailable string `json:"auditUnavailable,omitempty"`
	// WaitingApproval lists the calls held for an approval asked through
	// the client, one entry per ask, oldest first.
	WaitingApproval []WaitingCalls `json:"waitingApproval,omitempty"`
}

// WaitingCalls are the calls of one tool held for one approval: how many,
// on which execution epoch, and for how long the oldest has waited, in
// seconds.
type WaitingCalls struct {
	Tool         string      `json:"tool"`
	Epoch        epoch.Epoch `json:"executionEpoch"`
	Calls        int         `json:"calls"`
	SinceSeconds float64     `json:"secondsWaiting"`
}

// PolicyWeakening is one setting of mcpepoch.toml not in force because it
// would weaken the policy floor: its key ("grants.proof"), what the file
// says and what is in force instead, as TOML values.
type PolicyWeakening struct {
	Setting string `json:"setting"`
	File    string `json:"file"`
	InForce string `json:"inForce"`
	// Accepted: a person accepted it (mcpepoch policy accept); the host
	// puts it in force from its next epoch.
	Accepted bool `json:"accepted,omitempty"`
}

// Pending is a call refused for lack of a grant, shown by mcpepoch approve.
type Pending struct {
	Tool        string      `json:"tool"`
	Reason      string      `json:"reason"` // authorization_required | authorization_stale
	Epoch       epoch.Epoch `json:"epoch"`
	Credentials []string    `json:"credentialScope,omitempty"`
	PerCall     bool        `json:"perCall,omitempty"`
	At          time.Time   `json:"at"`
	Count       int         `json:"count"`
}

// IdentityLine is one artifact on the review screen.
type IdentityLine struct {
	Role     build.Role   `json:"role"`
	Path     string       `json:"path"`
	Digest   build.Digest `json:"digest"`
	Approved build.Digest `json:"approvedDigest,omitempty"` // at the last approved epoch
	Changed  bool         `json:"changed"`
	// Missing: the file does not exist, and is hashed as absent (Digest
	// empty), as a place one that appears would be read from.
	Missing bool `json:"missing,omitempty"`
}

// Review is the payload of a host's answer to [TypeReview]: what
// mcpepoch approve shows a person before they approve.
type Review struct {
	AgentRun        epoch.RunID    `json:"agentRun"`
	Label           string         `json:"label"`
	State           State          `json:"state"`
	Epoch           epoch.Epoch    `json:"epoch"`
	PID             int            `json:"pid"`
	ApprovedEpoch   epoch.Epoch    `json:"lastApprovedEpoch,omitempty"`
	Identity        []IdentityLine `json:"identity"`
	CatalogRevision Revision       `json:"catalogRevision,omitempty"`
	// CatalogPending: the host is fetching the server's first catalog
	// (after its first launch check), which the review then lacks;
	// mcpepoch approve waits for it rather than show an empty catalog.
	CatalogPending bool              `json:"catalogPending,omitempty"`
	Tools          []json.RawMessage `json:"tools"`
	// Coverage is what the review covers of the catalog: its changes since
	// the last approval (catalogChanges), each tool's credential scopes
	// (credentials), the per-call scopes (perCallScopes) and the exempt
	// tools (exemptTools). The approval rules are package grant's.
	grant.Coverage
	Pending []*Pending `json:"pending"`
	// Grants are the agent run's live grants (revoked ones are in the
	// grants file: the review does not grow with every grant ever made).
	Grants []*grant.Grant `json:"grants"`
	// Renewal, when set, is the approval the host prepared after an epoch
	// change revoked grants of this agent run: offered before anything
	// else (see [Renewal]).
	Renewal *Renewal `json:"renewal,omitempty"`
	// Proof is what the project counts as a person's approval of a grant
	// that uses no credential scope with a proof list of its own (grants.proof,
	// or its default now that an authenticator is or is not enrolled, the
	// policy floor applied); ScopeProof, for each credential scope whose own
	// list changes that, what a grant using it alone needs. mcpepoch approve
	// reads them to refuse at once an approval that cannot count; the host
	// still decides. Empty from hosts that do not send it.
	Proof      approval.Proofs            `json:"proof,omitempty"`
	ScopeProof map[string]approval.Proofs `json:"scopeProof,omitempty"`
	// A review is sent in pages, so that a catalog of any size fits the
	// socket's line limit: Tools holds the catalog's tools from ToolsFrom
	// (of ToolsTotal), CatalogChanges its changes from ChangesFrom (of
	// ChangesTotal). NextTools and NextChanges, when not zero, are where
	// the next page starts: ask again with a [ReviewRequest]. Every page
	// names its epoch and catalog revision; pages of different ones are
	// not one review.
	ToolsFrom    int `json:"toolsFrom,omitempty"`
	ToolsTotal   int `json:"toolsTotal"`
	NextTools    int `json:"nextTools,omitempty"`
	ChangesFrom  int `json:"changesFrom,omitempty"`
	ChangesTotal int `json:"changesTotal"`
	NextChanges  int `json:"nextChanges,omitempty"`
}

// ReviewRequest is the payload of a [TypeReview] request for a page after
// the first (an empty payload asks for the first).
type ReviewRequest struct {
	ToolsFrom   int `json:"toolsFrom"`
	ChangesFrom int `json:"changesFrom"`
}

// More reports whether the review has pages after this one.
func (r *Review) More() bool { return r.NextTools > 0 || r.NextChanges > 0 }

// ApproveRequest is the payload of a [TypeApprove] request.
type ApproveRequest struct {
	// Epoch is the epoch the person reviewed; the approval is refused if it
	// is no longer the running one.
	Epoch       epoch.Epoch `json:"epoch"`
	Tools       []string    `json:"tools"`
	All         bool        `json:"all"` // every tool of the current catalog
	Credentials []string    `json:"credentials"`
	Expires     string      `json:"expires"` // grant.ExpiresRunEnds (default), grant.ExpiresPerCall or a duration
	// Catalog is the catalog revision the person reviewed; the approval is
	// refused if the server's catalog changed since (a server can change it
	// within an epoch). Empty skips the check, for older clients.
	Catalog Revision `json:"catalog,omitempty"`
	// Channel is how the approval was collected: ChannelTerminal when
	// mcpepoch approve asked a person at its terminal and they said yes,
	// empty (or ChannelScript) for --yes. The host decides itself what the
	// approval proves (approval.Proof): a terminal approval counts as
	// approval.ProofTerminal only when the approving process passes the
	// host's proof check of the approve route (PermitPerson: package
	// approval, terminal.go).
	Channel string `json:"channel,omitempty"`
	// Renewal names the prepared renewal this approval answers
	// (Renewal.ID); the host refuses it when that renewal is no longer the
	// one it offers. Tools, Credentials and Expires still say exactly what
	// is approved: the renewal's, or more (a changed tool included).
	Renewal string `json:"renewal,omitempty"`
}

// Values of ApproveRequest.Channel.
const (
	ChannelTerminal = approval.ChannelTerminal // mcpepoch approve asked a person at its terminal
	ChannelScript   = approval.ChannelScript   // mcpepoch approve --yes: nobody was asked
)

// RevokeRequest is the payload of a [TypeRevoke] request.
type RevokeRequest struct {
	// ID is the grant to end (grant.Grant.ID). Required.
	ID epoch.GrantID `json:"id"`
}

// WebApproval is the answer to [TypeApproveWeb]: the approval page a person
// opens, and the grant digest its authenticator signs.
type WebApproval struct {
	// URL is the page, http://localhost:PORT/TOKEN/ (package ceremony).
	URL string `json:"url"`
	// Digest is the grant digest ("sha256:…", grant.Proposal.Digest), and
	// ShortCode its short form, shown on every screen that asks.
	Digest    string `json:"digest"`
	ShortCode string `json:"shortCode"`
	// Proposal is the grant whose digest Digest is: a client that signs
	// the digest (mcpepoch approve --ssh) computes it again from this and
	// checks it is the grant the person asked for, so that whatever
	// listens on the socket cannot have a person sign another one.
	Proposal *grant.Proposal `json:"proposal,omitempty"`
}

// WaitRequest is the payload of a [TypeApproveWait] request.
type WaitRequest struct {
	// Digest names the approval, as WebApproval.Digest.
	Digest string `json:"digest"`
}

// SSHApproveRequest is the payload of a [TypeApproveSSH] request: the
// SSHSIG (ssh-keygen -Y sign -n mcpepoch-grant@v1, armored) of an enrolled
// FIDO ssh key over the 32 bytes of the digest a [TypeProposeSSH] answer
// named.
type SSHApproveRequest struct {
	Digest    string `json:"digest"`
	Signature string `json:"signature"`
}

// Renewal is the approval a host prepares when an epoch change revoked
// grants (authorization_stale), or a stricter mcpepoch.toml did in the
// running epoch (policy_raised): the same tools and credential scopes on
// the new epoch, with what changed on top (the review's Identity and
// CatalogChanges, against the epoch the revoked grants named). A grant
// still ends with its epoch; a renewal only makes the next approval one
// gesture: mcpepoch approve, mcpepoch dev and the approval page offer it
// first.
//
// Tools are pre-selected: their definitions are the ones the person
// approved before. A tool whose definition changed is in Changed and is
// not pre-selected: a person includes it explicitly. A tool the catalog no
// longer offers is in Dropped. A renewal whose Tools is empty still shows
// what changed, and approves nothing by itself.
type Renewal struct {
	// ID is the grant digest ("sha256:…") of the renewal's proposal
	// (grant.Proposal over Tools, Credentials, Expires, Epoch and
	// CatalogRevision), and ShortCode its short form: the same on every
	// screen that offers it (terminal, dev, the approval page).
	ID        string `json:"id"`
	ShortCode string `json:"shortCode"`
	// FromEpoch is the epoch whose grants were revoked; Epoch and
	// CatalogRevision are what the renewal is for.
	FromEpoch       epoch.Epoch     `json:"fromEpoch"`
	Epoch           epoch.Epoch     `json:"epoch"`
	CatalogRevision Revision        `json:"catalogRevision"`
	Revoked         []epoch.GrantID `json:"revokedGrants"`
	// PolicyRaised: grants of it ended because mcpepoch.toml raised the
	// approval policy (policy_raised), not only with their epoch. FromEpoch
	// is then Epoch when they all ended in the running epoch; the renewal
	// needs the raised policy's proof (Proof).
	PolicyRaised bool `json:"policyRaised,omitempty"`
	// Tools (sorted) are pre-selected; Credentials (sorted, never nil)
	// the scopes of the revoked grants that they use; Expires the expiry
	// of the revoked grants that covered them (the shortest when they
	// differ, the duration counted again from the new approval).
	Tools       []string `json:"tools"`
	Credentials []string `json:"credentialScope"`
	Expires     string   `json:"expiresWhen"`
	// Changed are the tools whose definition changed, not pre-selected;
	// Added the tools the catalog gained since the last approval that a
	// grant must cover (no revoked grant covered them), not pre-selected
	// either (the person never approved them); Dropped the tools no
	// longer offered (sorted). A person includes a changed or added tool
	// by naming it (Request).
	Changed []RenewalChange `json:"changedTools"`
	Added   []RenewalChange `json:"addedTools"`
	Dropped []string        `json:"droppedTools"`
	// Proof lists what counts as a person's approval of the renewal as
	// prepared (approval.Proofs, weakest first: "terminal", "presence" …),
	// and Action says what a person does to give it: a screen that
	// cannot collect that proof points there instead of asking.
	Proof  []approval.Proof `json:"proof"`
	Action string           `json:"action"`
}

// Counts reports whether an approval proven as p counts for r as
// prepared.
func (r *Renewal) Counts(p approval.Proof) bool { return approval.Proofs(r.Proof).Counts(p) }

// RenewalChange is a tool of a renewal whose definition changed since the
// revoked grant, or that is new since the last approval: what changed
// (grant.DiffCatalogs), and the credential scopes it would add.
type RenewalChange struct {
	Tool        string         `json:"tool"`
	Changes     []grant.Change `json:"changes"`
	Credentials []string       `json:"credentialScope"`
}

// ChangedTools returns the names of r's changed tools.
func (r *Renewal) ChangedTools() []string {
	out := []string{}
	for _, c := range r.Changed {
		out = append(out, c.Tool)
	}
	return out
}

// AddedTools returns the names of r's added tools.
func (r *Renewal) AddedTools() []string {
	out := []string{}
	for _, c := range r.Added {
		out = append(out, c.Tool)
	}
	return out
}

// Request is the approval of r as prepared, plus the changed and added
// tools of include (others are ignored) with their credential scopes:
// what mcpepoch approve, dev and the approval page send. channel is
// ChannelTerminal or ChannelScript.
func (r *Renewal) Request(include []string, channel string) ApproveRequest {
	req := ApproveRequest{Epoch: r.Epoch, Catalog: r.CatalogRevision, Tools: slices.Clone(r.Tools),
		Credentials: slices.Clone(r.Credentials), Expires: r.Expires, Channel: channel, Renewal: r.ID}
	for _, c := range slices.Concat(r.Changed, r.Added) {
		if !slices.Contains(include, c.Tool) {
			continue
		}
		req.Tools = append(req.Tools, c.Tool)
		for _, s := range c.Credentials {
			if !slices.Contains(req.Credentials, s) {
				req.Credentials = append(req.Credentials, s)
			}
		}
	}
	slices.Sort(req.Tools)
	slices.Sort(req.Credentials)
	return req
}

// RevokeFile is the content of a revoke request file,
// .mcpepoch/revoke/<grant id>: the local API's second channel for revoke,
// which needs only a file write (mcpepoch revoke writes it before it tries
// the socket; a host acts on it within a second): {"v": 1, "grant":
// "<id>", "requestedAt": "<RFC 3339>"}. Grant must be the file's name.
type RevokeFile struct {
	V           int           `json:"v"`
	Grant       epoch.GrantID `json:"grant"`
	RequestedAt time.Time     `json:"requestedAt"`
}
