package approval

import (
	"errors"
	"fmt"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// The client channel: what a person's answer in the MCP client proves.
//
// A host asks through its client (elicitation, or input_required in the
// 2026-07-28 era) in one of two modes. A url elicitation only carries the
// person to the approval page, where the authenticator is the proof
// (web.go); a form's accept is itself an approval, of level ProofClient,
// and only where the proof list counts that level (AskMode). Even then it
// counts as client only when the host's client stands apart from every
// other running host's launching side (clientApart, below): an agent that
// runs a host of its own and answers its form with a client it wrote
// proves same-user.

// Modes of an ask through the MCP client.
const (
	ModeURL  = "url"  // elicitation/create of mode "url": the approval page
	ModeForm = "form" // a form whose accept approves where client counts, else only keeps the call waiting
)

// AskMode decides how a person is asked through the MCP client for an
// approval that needs need, given the elicitation modes the client
// declared (form, url: at least one) and whether an authenticator is
// enrolled: counts reports whether a form's accept counts as an approval
// (need counts ProofClient). The page (url) is asked for whenever the
// client offers it, except when the client also offers a form, a form's
// accept counts and no authenticator is enrolled: the page could then
// only say that nothing can sign on it.
func AskMode(form, url bool, need Proofs, enrolled bool) (mode string, counts bool) {
	counts = need.Counts(ProofClient)
	if url && !(form && counts && !enrolled) {
		return ModeURL, counts
	}
	return ModeForm, counts
}

// Client returns what an accept in the form of this host's MCP client
// (named client, from its clientInfo) proves: ProofClient when the client
// stands apart (clientApart), with Unverified set when that could not be
// decided; ProofSameUser, with why, when it does not or this host cannot
// identify its client. The caller asks it only of a form whose accept
// counts (AskMode). It reads the process table: never call it under a
// lock.
func (l Launch) Client(client string) Proven {
	pr := Proven{Proof: ProofClient, Channel: ChannelClient, Why: "accepted in the MCP client " + client}
	if refusal, unverified := l.clientApart(); refusal != "" {
		pr.Proof, pr.Why = ProofSameUser, refusal
	} else if unverified != "" {
		pr.Unverified = "client unverified: " + unverified
	}
	return pr
}

// ClientUnknown says, when this host cannot identify its MCP client
// (Unknown), why, and what proves a person instead; "" when it can.
func (l Launch) ClientUnknown() string {
	if l.unknown == "" {
		return ""
	}
	return "this host cannot identify its MCP client (" + l.unknown + "): no approval counts as terminal or client; " +
		"a person approves with an enrolled authenticator (" + selfcmd.Name() + " enroll, then " + selfcmd.Name() + " approve --web)"
}

// clientApart says whether an accept in this host's MCP client can count
// as ProofClient. The client is the first process above the host
// that is not a wrapper (launch.go), and it is judged by the rule of
// apart.go as a client: it must not be, or descend from, another running
// host, the server it runs, or a process of that host's launching side
// (its client, its wrappers, its ancestors within its session), unless
// it is itself one of that side (a client that runs several hosts side by
// side). An agent that runs a host of its own and answers its elicitation
// is below the real client, whatever program stands between that client
// and its host. The first process above this host that is not a known
// wrapper is taken for the client: a client that launches its hosts
// through a program that is not a known wrapper has none of their accepts
// counted while another of its hosts runs, for that program cannot be
// told from an agent's own client (the rule fails closed).
//
// It returns a non-empty refusal when the client does not stand apart
// or this host cannot identify its client (Launch.Unknown), and a
// non-empty unverified when it could not be decided (no process table:
// the accept still counts, and the audit record says it was not
// verified). Like the terminal rule it stops an agent's own process
// tree, not a fake client detached with setsid and reparented to PID 1,
// nor one that dresses as a known wrapper. It reads the process table:
// never call it under a lock.
func (l Launch) clientApart() (refusal, unverified string) {
	if l.unknown != "" {
		return "this host cannot identify its MCP client: " + l.unknown, ""
	}
	client := 0
	for _, a := range l.chain {
		if a.what == "" {
			client = a.pid
			break
		}
	}
	if client <= 1 {
		return "", "the MCP client above this host is not known"
	}
	err := apartFromHosts(client, true)
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, errHostsUnlisted):
		return "", err.Error()
	}
	return fmt.Sprintf("the MCP client (pid %d) was started under another host's session: %v", client, err), ""
}
