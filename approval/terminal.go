package approval

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// What an approval at a terminal proves.
//
// A request on a host's local socket comes from a process of the user;
// the kernel's peer credentials name its pid. An approval asked at a
// terminal counts as a person at a terminal (approval.ProofTerminal) only
// when that process has a controlling terminal and descends neither from
// the server, nor from the host, nor from any process of the chain that
// launched the host: the MCP client (the agent's own commands are its
// descendants) and the wrappers between it and the host (launch.go), nor
// from any other ancestor of the host within the host's session: an
// unlisted program between the client and the host does not shorten what
// is refused. The same goes for every other running host (apart.go): an
// agent that runs a host of its own approves it from below the real
// client's. A host that cannot identify its client (Launch.Unknown)
// counts no approval as terminal. Anything else proves same-user. This is a guard against an agent
// approving by accident or by a pasted command, not against a determined
// program: one can open a pseudo-terminal (script(1)) in a process it
// detached with setsid and a double fork, and the check cannot tell it
// from a person. Where the process table cannot be read nothing counts as
// terminal.

// AtTerminal returns "" when the process pid, which asked a host launched
// by l at a terminal, stands for a person at a terminal, else why not
// (for the refusal and the audit log). server is the pid of the host's
// running server (0: none); the host is this process. It reads the
// process table: never call it under a lock.
func (l Launch) AtTerminal(pid, server int) string {
	if pid <= 0 {
		return "the socket does not say which process asked"
	}
	if l.unknown != "" {
		return "this host cannot identify its MCP client: " + l.unknown
	}
	ppid, tty, err := proctree.Parent(pid)
	if err != nil {
		return fmt.Sprintf("the approving process (pid %d) cannot be examined: %v", pid, err)
	}
	if !tty {
		return fmt.Sprintf("the approving process (pid %d) has no controlling terminal", pid)
	}
	self := os.Getpid()
	for p, n := pid, 0; p > 1; p, n = ppid, n+1 {
		switch {
		case p == server:
			return fmt.Sprintf("the approving process (pid %d) descends from the server (pid %d)", pid, server)
		case p == self:
			return fmt.Sprintf("the approving process (pid %d) descends from this host (pid %d)", pid, self)
		case l.member(p) != nil:
			return fmt.Sprintf("the approving process (pid %d) descends from %s", pid, l.member(p).describe())
		case l.inSession(p):
			return fmt.Sprintf("the approving process (pid %d) descends from process %d, which started this host within its session (the MCP client's side)", pid, p)
		case n >= proctree.MaxAncestry:
			return fmt.Sprintf("the approving process (pid %d) has more than %d ancestors", pid, proctree.MaxAncestry)
		}
		if p != pid {
			if ppid, _, err = proctree.Parent(p); err != nil {
				return fmt.Sprintf("an ancestor (pid %d) of the approving process cannot be examined: %v", p, err)
			}
		}
	}
	if err := apartFromHosts(pid, false); err != nil {
		return "the approving process stands below another host's launch: " + err.Error()
	}
	return ""
}

// PersonAtTerminal reports why the calling process cannot stand for a
// person at a terminal, by the rules of an approval at a terminal
// (approver.go): it must have a controlling terminal and stand apart from
// every running mcpepoch host's launching side (apart.go: the host, the
// server it runs, its client and wrappers, its ancestors within its
// session). It returns nil when it can; mcpepoch enroll asks it before
// the first authenticator, which nothing signs, is trusted.
//
// Like the approval guard, it stops an agent that has no terminal of its
// own, not a determined program: a pseudo-terminal opened by a process
// detached with setsid and a double fork passes. It reads the process
// table (Linux /proc, macOS sysctl or ps); elsewhere it always refuses.
func PersonAtTerminal() error {
	self := os.Getpid()
	_, tty, err := proctree.Parent(self)
	if err != nil {
		return fmt.Errorf("this process cannot be examined: %v", err)
	}
	if !tty {
		return errors.New("this process has no controlling terminal")
	}
	return apartFromHosts(self, false)
}

// TellsApart reports why this process, though at a terminal, cannot be
// told apart from an agent's for a weakening of the policy floor of a
// project whose running hosts are the processes hosts (as the caller
// found them: the kernel's word on who listens on the project's sockets,
// never a file's). That takes at least one of them, each an mcpepoch host
// that identified its MCP client (its session can be walked: Launch), and
// this process standing for a person at a terminal (PersonAtTerminal:
// apart from every running host, these included). With no host of the
// project running the agent may have ended it, and a host of another
// project says nothing of where this project's agent is; with one that
// cannot identify its client, nothing says where its agent's side is. It
// returns nil when the process can be told apart.
func TellsApart(hosts []int) error {
	if len(hosts) == 0 {
		return errors.New("no host of this project is running, so nothing tells this terminal from an agent's")
	}
	me, _ := os.Executable()
	for _, pid := range hosts {
		exe, argv, err := proctree.Args(pid)
		if err != nil {
			return fmt.Errorf("the project's host (pid %d) cannot be examined: %v", pid, err)
		}
		if !isHostProcess(exe, argv, me) {
			return fmt.Errorf("the process listening on a socket of the project (pid %d) is not an mcpepoch host", pid)
		}
		ppid, _, err := proctree.Parent(pid)
		if err != nil {
			return fmt.Errorf("the project's host (pid %d) cannot be examined: %v", pid, err)
		}
		if _, unknown := sessionAncestors(pid, ppid); unknown != "" {
			return fmt.Errorf("the project's host (pid %d) cannot identify its MCP client: %s", pid, unknown)
		}
	}
	return PersonAtTerminal()
}
