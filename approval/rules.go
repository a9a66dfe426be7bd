package approval

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// Proof is how a person was proven when a grant was approved: a proof
// level of mcpepoch.toml's [grants] proof (config.Grants.Proof).
type Proof string

// The proof levels, strongest first.
const (
	// ProofPresence: a FIDO authenticator enrolled in the trust store
	// (package trust) signed the grant's digest with user presence (a
	// WebAuthn assertion or an SSHSIG of an sk key). The one level a
	// program of the same user cannot produce without a person's touch.
	ProofPresence Proof = "presence"
	// ProofTerminal: a person answered mcpepoch approve at an interactive
	// terminal, and the approving process has a controlling terminal and
	// descends neither from the MCP client that launched the host nor from
	// the host (and so its server). A guard against accidents and pasted
	// commands, not against a determined program: a program can open a
	// pseudo-terminal and leave its ancestry behind (setsid, a double fork).
	ProofTerminal Proof = "terminal"
	// ProofClient: the person accepted in the MCP client's own UI (form
	// elicitation). Only as trustworthy as the client and its hooks.
	ProofClient Proof = "client"
	// ProofSameUser: any process of the same OS user asked, mcpepoch
	// approve --yes included (scripts, CI, tests). It proves no person and
	// is recorded as unverified; it counts only where a proof list names it.
	ProofSameUser Proof = "same-user"
)

// rank orders the levels: higher is stronger.
func (p Proof) rank() int {
	switch p {
	case ProofPresence:
		return 4
	case ProofTerminal:
		return 3
	case ProofClient:
		return 2
	case ProofSameUser:
		return 1
	}
	return 0
}

// Proofs is a proof list: the levels that count as a person's approval.
type Proofs []Proof

// String returns the list as "presence, terminal".
func (l Proofs) String() string {
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// Counts reports whether an approval proven at level got counts under l:
// l names got, or l names same-user (anything of the user counts, though
// it is recorded for what it was), or got is presence, the strongest.
func (l Proofs) Counts(got Proof) bool {
	return got == ProofPresence || slices.Contains(l, got) || slices.Contains(l, ProofSameUser)
}

// weakest returns the rank of the weakest level l names.
func (l Proofs) weakest() int {
	w := 0
	for _, p := range l {
		if r := p.rank(); w == 0 || r < w {
			w = r
		}
	}
	return w
}

// DefaultProof is the proof list when mcpepoch.toml sets none: presence
// once an authenticator is enrolled, else terminal or client.
func DefaultProof(enrolled bool) Proofs {
	if enrolled {
		return Proofs{ProofPresence}
	}
	return Proofs{ProofTerminal, ProofClient}
}

// DefaultProofText names the default proof list as it is in force, for
// the places that print an unset grants.proof: `["presence"] (default: an
// authenticator is enrolled)` or `["terminal", "client"] (default: no
// authenticator is enrolled)`.
func DefaultProofText(enrolled bool) string {
	l := DefaultProof(enrolled)
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = strconv.Quote(string(p))
	}
	why := "no authenticator is enrolled"
	if enrolled {
		why = "an authenticator is enrolled"
	}
	return "[" + strings.Join(s, ", ") + "] (default: " + why + ")"
}

// Stricter returns the proof list that applies where both a and b do (b
// a credential scope's own list, nil for none): the levels both name, in
// a's order; when they name none in common, the list whose weakest level
// is strongest (b on a tie). Stricter(a, nil) is a.
func Stricter(a, b Proofs) Proofs {
	if b == nil {
		return a
	}
	var both Proofs
	for _, l := range a {
		if slices.Contains(b, l) {
			both = append(both, l)
		}
	}
	switch {
	case len(both) > 0:
		return both
	case b.weakest() >= a.weakest():
		return b
	}
	return a
}

// ParseProofs converts a proof list as mcpepoch.toml or a policy floor
// spells it (validated by config.Load: each a level above); nil stays nil,
// which every caller reads as "no list of its own".
func ParseProofs(list []string) Proofs {
	if list == nil {
		return nil
	}
	out := make(Proofs, len(list))
	for i, s := range list {
		out[i] = Proof(s)
	}
	return out
}

// The channels a person's decision comes through, as grant.Grant.Channel
// and the audit log's "channel" name them.
const (
	ChannelTerminal = "terminal" // mcpepoch approve asked a person at its terminal (terminal.go)
	ChannelScript   = "script"   // mcpepoch approve --yes: nobody was asked
	ChannelClient   = "client"   // a form accepted in the MCP client (client.go)
	ChannelWeb      = "web"      // the approval page, a WebAuthn assertion (web.go)
	ChannelSSH      = "ssh"      // mcpepoch approve --ssh, an SSHSIG (ssh.go)
)

// Proven is how a person was proven, as the side that checked it
// established it (a channel of this package, run by the host or the
// command): never what a request claims.
type Proven struct {
	Proof   Proof
	Channel string // ChannelTerminal …
	// Why says why the decision proves no more than Proof (the refusal,
	// the audit log); empty when it proves what its channel can.
	Why string
	// Unverified says why the rule behind Proof could not be checked
	// (the audit log's "unverified"): the decision still counts as Proof.
	Unverified string
	// A presence signature: the enrolled authenticator's id (package
	// trust), the counter it reported, the digest it signed (hex), and the
	// signature itself when it can be checked again later (an SSHSIG,
	// which audit verify checks).
	Authenticator string
	SignCount     uint32
	Digest        string
	Signature     string
}

// Shortfall returns "" when p counts under need (Proofs.Counts), else the
// refusal a person reads: what p proves and why no more, what counts, and
// what a person does instead (HowToApprove).
func (p Proven) Shortfall(need Proofs) string {
	if need.Counts(p.Proof) {
		return ""
	}
	why := ""
	if p.Why != "" {
		why = " (" + p.Why + ")"
	}
	return fmt.Sprintf("this approval proves only %s%s, and this project counts only %s as a person's approval: %s",
		p.Proof, why, need, HowToApprove(need))
}

// HowToApprove says what a person should do to approve under need; it
// never names a way for a program to approve by itself.
func HowToApprove(need Proofs) string {
	switch {
	case need.Counts(ProofTerminal):
		return "a person must run " + selfcmd.Name() + " approve in their own terminal"
	case need.Counts(ProofClient):
		return "a person must accept it in the MCP client, or approve with an enrolled authenticator (" + selfcmd.Name() + " approve --web in their terminal)"
	}
	return "a person must approve it with an enrolled authenticator: " + selfcmd.Name() + " approve --web (or --ssh KEY) in their terminal, then a touch"
}

// Pinned is the rule both presence channels (web.go, ssh.go) share about
// the trust store: a signature counts only by the store the host read at
// start, whose digest (trust.Store.Digest) is pinned ("" when it could
// not be read). It refuses when the store at path, whose digest is now
// found, differs: an authenticator added or removed while a host runs
// counts for nothing until the host restarts.
func Pinned(pinned, found, path string) error {
	if pinned == "" || found != pinned {
		return fmt.Errorf("the trust store %s changed since the host started (pinned %s, now %s): presence counts only with the store the host started with; restart the MCP client's server to take the change", path, pinned, found)
	}
	return nil
}
