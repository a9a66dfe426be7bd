package approval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// The one rule every person check applies to the other hosts running.
//
// An agent's commands descend from the MCP client that runs it, and that
// client launched a host: its commands are below the host's launching
// side. Which process of that side is the client no list of wrappers can
// say (any program may stand between the client and the host), but the
// host's session can: a person's own terminal is a session of its own. So
// the launching side of a running host is the host itself, the chain of
// its parent and the wrappers above it (launch.go), and every ancestor of
// the host within its session, up to and including the session leader.
//
// A process that is or descends from a process of any running host's
// launching side stands for no person: not as an approver at a terminal,
// not as a terminal accepting a weakening of the policy floor, not as an
// MCP client accepting a form. An MCP client is judged by the same rule
// with one difference: it may itself be one of another host's launching
// side (a client that runs several hosts side by side launched them all),
// but not below one (an agent's own client is). A host whose session
// cannot be walked (it leads one of its own) has no ancestor in it: its
// launching side is then the host and its chain only.

// errHostsUnlisted: the process table cannot be read here.
var errHostsUnlisted = errors.New("the running hosts cannot be listed")

// launchSide is the launching side of a running host (see above).
type launchSide struct {
	host    int
	chain   []ancestor
	session []int
}

// hostsBut lists the launching side of every running mcpepoch host other
// than this process and skip (0: none), or fails with errHostsUnlisted.
func hostsBut(skip int) ([]launchSide, error) {
	self := os.Getpid()
	pids, err := proctree.List()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHostsUnlisted, err)
	}
	me, _ := os.Executable()
	var out []launchSide
	for _, pid := range pids {
		if pid == self || pid == skip {
			continue
		}
		exe, argv, err := proctree.Args(pid)
		if err != nil || !isHostProcess(exe, argv, me) {
			continue
		}
		side := launchSide{host: pid}
		if ppid, _, err := proctree.Parent(pid); err == nil {
			if forkOf(ppid, exe, argv) {
				continue
			}
			side.chain = clientChain(ppid, "")
			side.session, _ = sessionAncestors(pid, ppid)
		}
		out = append(out, side)
	}
	return out, nil
}

// forkOf says whether a process running exe with argv, whose parent is
// ppid, is a copy of its parent between fork and exec (a host or mcpepoch
// dev starting a server or a build): the parent runs the same executable
// with the same arguments. Such a process is no host of its own, and
// leaving it out loses nothing: its parent is one, whose launching side
// holds all that the copy's would.
func forkOf(ppid int, exe string, argv []string) bool {
	pexe, pargv, err := proctree.Args(ppid)
	return err == nil && pexe == exe && slices.Equal(pargv, argv)
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

// member says whether pid is a process of s's chain or session.
func (s launchSide) member(pid int) bool {
	if inChain(s.chain, pid) {
		return true
	}
	for _, p := range s.session {
		if p == pid {
			return true
		}
	}
	return false
}

// below reports why pid is, or descends from, a process of s, or nil.
// A client (the rule above) may be one of s's chain or session.
func (s launchSide) below(pid int, client bool) error {
	if client && s.member(pid) {
		return nil
	}
	if proctree.IsAncestor(pid, s.host) {
		return fmt.Errorf("process %d descends from an mcpepoch host (pid %d) or the server it runs", pid, s.host)
	}
	for _, a := range s.chain {
		if !proctree.IsAncestor(pid, a.pid) {
			continue
		}
		if a.what == "" {
			return fmt.Errorf("process %d descends from the MCP client that launched an mcpepoch host (pid %d): process %d", pid, s.host, a.pid)
		}
		return fmt.Errorf("process %d descends from a wrapper (%s) that launched an mcpepoch host (pid %d): process %d", pid, strings.TrimPrefix(a.what, "wrapper: "), s.host, a.pid)
	}
	for _, a := range s.session {
		if proctree.IsAncestor(pid, a) {
			return fmt.Errorf("process %d descends from process %d, which started an mcpepoch host (pid %d) within its session", pid, a, s.host)
		}
	}
	return nil
}

// apartFromHosts applies the rule above to pid, against every running
// host but this process and pid itself (a process judged as a person is
// not judged as the host it may be: mcpepoch dev's own prompt). client
// says pid is judged as an MCP client. It returns nil when pid stands
// apart, and an error wrapping errHostsUnlisted when the hosts cannot be
// listed (the caller decides what an undecided answer counts for).
func apartFromHosts(pid int, client bool) error {
	sides, err := hostsBut(pid)
	if err != nil {
		return err
	}
	for _, s := range sides {
		if err := s.below(pid, client); err != nil {
			return err
		}
	}
	return nil
}
