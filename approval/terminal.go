package approval

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// The terminal channel: what an answer given at a terminal proves.
//
// A request on a host's local socket comes from a process of the user;
// the kernel's peer credentials name its pid. An approval asked at a
// terminal counts as a person at a terminal (ProofTerminal) only when
// that process has a controlling terminal and descends neither from the
// server, nor from the host, nor from any process of the chain that
// launched the host: the MCP client (the agent's own commands are its
// descendants) and the wrappers between it and the host (launch.go), nor
// from any other ancestor of the host within the host's session: an
// unlisted program between the client and the host does not shorten what
// is refused. The same goes for every other running host (apart.go): an
// agent that runs a host of its own approves it from below the real
// client's. A host that cannot identify its client (Launch.Unknown)
// counts no approval as terminal. Anything else proves same-user.
//
// The same rule, AtTerminal, decides wherever a person answers at a
// terminal: the host runs it on the peer of mcpepoch approve (Terminal,
// through the local API's PermitPerson), and a command runs it on itself
// where no host asks (mcpepoch enroll's first authenticator:
// PersonAtTerminal; mcpepoch policy accept: TellsApart). A command's own
// host has no Launch to judge it by, so it is judged, like every other
// host, by its launching side as the process table shows it (apart.go).
//
// This is a guard against an agent approving by accident or by a pasted
// command, not against a determined program: one can open a
// pseudo-terminal (script(1)) in a process it detached with setsid and a
// double fork, and the check cannot tell it from a person. Where the
// process table cannot be read nothing counts as terminal.

// AtTerminal reports why process pid cannot stand for a person at a
// terminal, or nil when it can: it must have a controlling terminal and
// stand apart from every running host's launching side (apart.go). host
// is the launch of the host that asks, when a host asks about the peer of
// its socket (pid 0: the socket did not say which process asked): pid must
// then also descend neither from server (the pid of the host's running
// server, 0: none), nor from the host, nor from any process of host's
// chain or session. A process asking about itself passes nil. It reads the
// process table: never call it under a lock.
func AtTerminal(pid int, host *Launch, server int) error {
	who := "this process"
	if host != nil {
		if pid <= 0 {
			return errors.New("the socket does not say which process asked")
		}
		if host.unknown != "" {
			return errors.New("this host cannot identify its MCP client: " + host.unknown)
		}
		who = fmt.Sprintf("the approving process (pid %d)", pid)
	}
	ppid, tty, err := proctree.Parent(pid)
	if err != nil {
		return fmt.Errorf("%s cannot be examined: %v", who, err)
	}
	if !tty {
		return fmt.Errorf("%s has no controlling terminal", who)
	}
	if host == nil {
		return apartFromHosts(pid, false)
	}
	if why := host.above(pid, ppid, server); why != "" {
		return errors.New(why)
	}
	if err := apartFromHosts(pid, false); err != nil {
		return fmt.Errorf("the approving process stands below another host's launch: %w", err)
	}
	return nil
}

// above returns why pid, whose parent is ppid, descends from server, this
// host (this process) or a process of l's chain or session; "" when it
// does not.
func (l Launch) above(pid, ppid, server int) string {
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
			var err error
			if ppid, _, err = proctree.Parent(p); err != nil {
				return fmt.Sprintf("an ancestor (pid %d) of the approving process cannot be examined: %v", p, err)
			}
		}
	}
	return ""
}

// Terminal returns what an approval asked over the socket of a host
// launched by l proves: asked at a terminal (the request's channel is
// ChannelTerminal: mcpepoch approve asked a person and they said yes) by
// process pid (the socket's peer credentials; 0 when they do not say)
// that stands for a person at a terminal (AtTerminal, with server the
// pid of the host's running server, 0: none), it proves ProofTerminal;
// anything else proves ProofSameUser, with why. The request's channel is
// a claim: it only ever lowers what the process proves. It reads the
// process table: never call it under a lock.
func (l Launch) Terminal(asked bool, pid, server int) Proven {
	if !asked {
		return Proven{Proof: ProofSameUser, Channel: ChannelScript, Why: "nobody was asked at a terminal"}
	}
	if err := AtTerminal(pid, &l, server); err != nil {
		return Proven{Proof: ProofSameUser, Channel: ChannelTerminal, Why: err.Error()}
	}
	return Proven{Proof: ProofTerminal, Channel: ChannelTerminal}
}

// PersonAtTerminal reports why the calling process cannot stand for a
// person at a terminal (AtTerminal of itself: a controlling terminal, and
// apart from every running mcpepoch host's launching side, apart.go: the
// host, the server it runs, its client and wrappers, its ancestors within
// its session). It returns nil when it can; mcpepoch enroll asks it
// before the first authenticator, which nothing signs, is trusted.
//
// Like the approval guard, it stops an agent that has no terminal of its
// own, not a determined program: a pseudo-terminal opened by a process
// detached with setsid and a double fork passes. It reads the process
// table (Linux /proc, macOS sysctl or ps); elsewhere it always refuses.
func PersonAtTerminal() error {
	return AtTerminal(os.Getpid(), nil, 0)
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
