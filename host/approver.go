package host

import (
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// What a socket approval proves (grant.Proof).
//
// A request on the local socket comes from a process of the user; the
// kernel's peer credentials name its pid. An approval asked at a terminal
// (ApproveRequest.Channel "terminal", as mcpepoch approve sends it when it
// asked a person) counts as grant.ProofTerminal only when that process has
// a controlling terminal and descends neither from the server, nor from
// this host, nor from any process of the chain that launched the host:
// the MCP client (the agent's own commands are its descendants) and the
// wrappers between it and the host (ancestry.go). Anything else proves
// grant.ProofSameUser. This is a guard against an agent approving by
// accident or by a pasted command, not against a determined program: one
// can open a pseudo-terminal (script(1)) in a process it detached with
// setsid and a double fork, and the check cannot tell it from a person.
// Linux reads /proc; macOS sysctl kern.proc.pid, else ps(1); elsewhere
// nothing counts as terminal.

// maxAncestry bounds the walk up the process tree.
const maxAncestry = 1024

// approverProof returns what an approval request from peer proves, and,
// when it is not grant.ProofTerminal, why not (for the refusal and the
// audit log). server is the pid of the running server (0: none). It reads
// the process table: never call it under h.mu.
func (h *Host) approverProof(peer notify.Peer, channel string, server int) (grant.Proof, string) {
	if channel != localapi.ChannelTerminal {
		return grant.ProofSameUser, "nobody was asked at a terminal"
	}
	if !peer.Checked || peer.PID <= 0 {
		return grant.ProofSameUser, "the socket does not say which process asked"
	}
	ppid, tty, err := procParent(peer.PID)
	if err != nil {
		return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) cannot be examined: %v", peer.PID, err)
	}
	if !tty {
		return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) has no controlling terminal", peer.PID)
	}
	self := os.Getpid()
	for pid, n := peer.PID, 0; pid > 1; pid, n = ppid, n+1 {
		switch {
		case pid == server:
			return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) descends from the server (pid %d)", peer.PID, server)
		case pid == self:
			return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) descends from this host (pid %d)", peer.PID, self)
		case h.launchedBy(pid) != nil:
			return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) descends from %s", peer.PID, h.launchedBy(pid).describe())
		case n >= maxAncestry:
			return grant.ProofSameUser, fmt.Sprintf("the approving process (pid %d) has more than %d ancestors", peer.PID, maxAncestry)
		}
		if pid != peer.PID {
			if ppid, _, err = procParent(pid); err != nil {
				return grant.ProofSameUser, fmt.Sprintf("an ancestor (pid %d) of the approving process cannot be examined: %v", pid, err)
			}
		}
	}
	return grant.ProofTerminal, ""
}

// howToApprove says what a person should do to approve under need; it
// never names a way for a program to approve by itself.
func howToApprove(need grant.Proofs) string {
	switch {
	case need.Counts(grant.ProofTerminal):
		return "a person must run " + selfcmd.Name() + " approve in their own terminal"
	case need.Counts(grant.ProofClient):
		return "a person must accept it in the MCP client, or approve with an enrolled authenticator (" + selfcmd.Name() + " approve --web in their terminal)"
	}
	return "a person must approve it with an enrolled authenticator: " + selfcmd.Name() + " approve --web (or --ssh KEY) in their terminal, then a touch"
}

// launchedBy returns the member of the host's launch chain that pid is, or nil.
func (h *Host) launchedBy(pid int) *ancestor {
	for i := range h.clients {
		if h.clients[i].pid == pid {
			return &h.clients[i]
		}
	}
	return nil
}
