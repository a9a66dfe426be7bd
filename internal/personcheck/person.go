package personcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// PersonAtTerminal reports why the calling process cannot stand for a
// person at a terminal, by the rules of an approval at a terminal
// (approver.go): it must have a controlling terminal and descend neither
// from a running mcpepoch host (nor so from the server it runs) nor from
// any process of the chain that launched one (the MCP client and its
// wrappers, launch.go). It returns nil when it can; mcpepoch enroll asks
// it before the first authenticator, which nothing signs, is trusted.
//
// Like the approval guard, it stops an agent that has no terminal of its
// own, not a determined program: a pseudo-terminal opened by a process
// detached with setsid and a double fork passes. It reads the process
// table (Linux /proc, macOS ps); elsewhere it always refuses.
func PersonAtTerminal() error {
	self := os.Getpid()
	_, tty, err := proctree.Parent(self)
	if err != nil {
		return fmt.Errorf("this process cannot be examined: %v", err)
	}
	if !tty {
		return errors.New("this process has no controlling terminal")
	}
	return underOtherHost(self, true)
}

// errHostsUnlisted: the process table cannot be read here.
var errHostsUnlisted = errors.New("the running hosts cannot be listed")

// underOtherHost reports why from cannot stand apart from the running
// mcpepoch hosts other than this process: it is one of them or descends
// from one (and so from the server it runs), or it is or descends from a
// process of the chain that launched one (the MCP client and its
// wrappers, launch.go), or, with session, from any ancestor of one within
// that host's session (approver.go). It returns nil when it stands apart, and an
// error also when the hosts cannot be listed (the caller decides what an
// undecided answer counts for).
func underOtherHost(from int, session bool) error {
	self := os.Getpid()
	pids, err := proctree.List()
	if err != nil {
		return fmt.Errorf("%w: %v", errHostsUnlisted, err)
	}
	me, _ := os.Executable()
	for _, pid := range pids {
		if pid == self {
			continue
		}
		exe, argv, err := proctree.Args(pid)
		if err != nil || !isHostProcess(exe, argv, me) {
			continue
		}
		if proctree.IsAncestor(from, pid) {
			return fmt.Errorf("process %d descends from an mcpepoch host (pid %d) or the server it runs", from, pid)
		}
		ppid, _, err := proctree.Parent(pid)
		if err != nil {
			continue
		}
		for _, a := range clientChain(ppid, "") {
			if proctree.IsAncestor(from, a.pid) {
				return fmt.Errorf("process %d descends from %s", from, a.describe())
			}
		}
		if !session {
			continue
		}
		up, _ := sessionAncestors(pid, ppid)
		for _, a := range up {
			if proctree.IsAncestor(from, a) {
				return fmt.Errorf("process %d descends from process %d, which started an mcpepoch host (pid %d) within its session", from, a, pid)
			}
		}
	}
	return nil
}

// isHostProcess says whether a process running exe with argv is an
// mcpepoch host: mcpepoch host or mcpepoch dev, by this executable or by
// one named mcpepoch (another install).
func isHostProcess(exe string, argv []string, me string) bool {
	if len(argv) < 2 || (argv[1] != "host" && argv[1] != "dev") {
		return false
	}
	named := func(p string) bool { b := filepath.Base(p); return b == "mcpepoch" }
	return (me != "" && exe == me) || named(argv[0]) || named(exe)
}

// ClientApart says whether an accept in this host's MCP client can count
// as grant.ProofClient: the client (the first process above the host that
// is not a wrapper, launch.go) must not descend from another running
// mcpepoch host, the server it runs, or the client chain that launched it.
// An agent that runs a host of its own and answers its elicitation is such
// a descendant; a client that runs several hosts side by side is not (its
// own ancestors are checked, not the client itself). It returns a
// non-empty refusal when the client does not stand apart, and a non-empty
// unverified when it could not be decided (no process table: the accept
// still counts, and the audit record says it was not verified). Like the
// terminal rule it stops an agent's own process tree, not a fake client
// detached with setsid and reparented to PID 1. It reads the process
// table: never call it under a lock.
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
	ppid, _, err := proctree.Parent(client)
	if err != nil {
		return "", fmt.Sprintf("the MCP client (pid %d) cannot be examined: %v", client, err)
	}
	if ppid <= 1 {
		return "", ""
	}
	err = underOtherHost(ppid, false)
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, errHostsUnlisted):
		return "", err.Error()
	}
	return fmt.Sprintf("the MCP client (pid %d) was started under another host's session: %v", client, err), ""
}

// TellsApart reports why this process, though at a terminal, cannot be
// told apart from an agent's for a weakening of the policy floor: that
// takes a running mcpepoch host that identified its MCP client (its
// session can be walked, package doc of Launch), with this process
// descending from none of the hosts, their clients or their ancestors
// within their sessions (PersonAtTerminal). With no host running the agent
// may have ended it, and nothing says where the agent's side is; it then
// returns an error, as it does for a host that cannot identify its client.
// It returns nil when the process can be told apart.
func TellsApart() error {
	if err := PersonAtTerminal(); err != nil {
		return err
	}
	self := os.Getpid()
	pids, err := proctree.List()
	if err != nil {
		return fmt.Errorf("%w: %v", errHostsUnlisted, err)
	}
	me, _ := os.Executable()
	found := 0
	for _, pid := range pids {
		exe, argv, err := proctree.Args(pid)
		if pid == self || err != nil || !isHostProcess(exe, argv, me) {
			continue
		}
		ppid, _, err := proctree.Parent(pid)
		if err != nil {
			return fmt.Errorf("an mcpepoch host (pid %d) cannot be examined: %v", pid, err)
		}
		if _, unknown := sessionAncestors(pid, ppid); unknown != "" {
			return fmt.Errorf("an mcpepoch host (pid %d) cannot identify its MCP client: %s", pid, unknown)
		}
		found++
	}
	if found == 0 {
		return errors.New("no mcpepoch host is running, so nothing tells this terminal from an agent's")
	}
	return nil
}
