package personcheck

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

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

// ClientApart says whether an accept in this host's MCP client can count
// as approval.ProofClient. The client is the first process above the host
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
func (l Launch) ClientApart() (refusal, unverified string) {
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
