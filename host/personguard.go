package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PersonAtTerminal reports why the calling process cannot stand for a
// person at a terminal, by the rules of an approval at a terminal
// (approver.go): it must have a controlling terminal and descend neither
// from a running mcpepoch host (nor so from the server it runs) nor from
// any process of the chain that launched one (the MCP client and its
// wrappers, ancestry.go). It returns nil when it can; mcpepoch enroll asks
// it before the first authenticator, which nothing signs, is trusted.
//
// Like the approval guard, it stops an agent that has no terminal of its
// own, not a determined program: a pseudo-terminal opened by a process
// detached with setsid and a double fork passes. It reads the process
// table (Linux /proc, macOS ps); elsewhere it always refuses.
func PersonAtTerminal() error {
	self := os.Getpid()
	_, tty, err := procParent(self)
	if err != nil {
		return fmt.Errorf("this process cannot be examined: %v", err)
	}
	if !tty {
		return errors.New("this process has no controlling terminal")
	}
	pids, err := procList()
	if err != nil {
		return fmt.Errorf("the running hosts cannot be listed: %v", err)
	}
	me, _ := os.Executable()
	for _, pid := range pids {
		if pid == self {
			continue
		}
		exe, argv, err := procArgs(pid)
		if err != nil || !isHostProcess(exe, argv, me) {
			continue
		}
		if isAncestor(self, pid) {
			return fmt.Errorf("this process descends from an mcpepoch host (pid %d) or the server it runs", pid)
		}
		ppid, _, err := procParent(pid)
		if err != nil {
			continue
		}
		for _, a := range clientChain(ppid, "") {
			if isAncestor(self, a.pid) {
				return fmt.Errorf("this process descends from %s", a.describe())
			}
		}
	}
	return nil
}

// isHostProcess says whether a process running exe with argv is an
// mcpepoch host: mcpepoch host or mcpepoch dev, by this executable or one
// named mcpepoch.
func isHostProcess(exe string, argv []string, me string) bool {
	if len(argv) < 2 || (argv[1] != "host" && argv[1] != "dev") {
		return false
	}
	return (me != "" && exe == me) || filepath.Base(argv[0]) == "mcpepoch" || filepath.Base(exe) == "mcpepoch"
}
