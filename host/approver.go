package host

import (
	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// approverProof returns what an approval request from peer proves, and,
// when it is not approval.ProofTerminal, why not (for the refusal and the
// audit log): an approval asked at a terminal (ApproveRequest.Channel
// "terminal", as mcpepoch approve sends it when it asked a person) by a
// process that stands for a person at a terminal by approval's rule (terminal.go)
// proves terminal; anything else same-user. server is the pid of the
// running server (0: none). It reads the process table: never call it
// under h.mu.
func (h *Host) approverProof(peer notify.Peer, channel string, server int) (approval.Proof, string) {
	if channel != localapi.ChannelTerminal {
		return approval.ProofSameUser, "nobody was asked at a terminal"
	}
	if !peer.Checked || peer.PID <= 0 {
		return approval.ProofSameUser, "the socket does not say which process asked"
	}
	if why := h.clients.AtTerminal(peer.PID, server); why != "" {
		return approval.ProofSameUser, why
	}
	return approval.ProofTerminal, ""
}

// howToApprove says what a person should do to approve under need; it
// never names a way for a program to approve by itself.
func howToApprove(need approval.Proofs) string {
	switch {
	case need.Counts(approval.ProofTerminal):
		return "a person must run " + selfcmd.Name() + " approve in their own terminal"
	case need.Counts(approval.ProofClient):
		return "a person must accept it in the MCP client, or approve with an enrolled authenticator (" + selfcmd.Name() + " approve --web in their terminal)"
	}
	return "a person must approve it with an enrolled authenticator: " + selfcmd.Name() + " approve --web (or --ssh KEY) in their terminal, then a touch"
}

// clientUnknown says, when this host cannot identify its MCP client, why,
// and what proves a person instead; "" when it can.
func (h *Host) clientUnknown() string {
	why := h.clients.Unknown()
	if why == "" {
		return ""
	}
	return "this host cannot identify its MCP client (" + why + "): no approval counts as terminal or client; " +
		"a person approves with an enrolled authenticator (" + selfcmd.Name() + " enroll, then " + selfcmd.Name() + " approve --web)"
}
