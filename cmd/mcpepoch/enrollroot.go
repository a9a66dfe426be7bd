package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/trust"
)

// confirmRoot asks the person at this process's terminal whether a, about
// to be the first authenticator (the store's root, trusted without any
// signature), is theirs. It refuses when the process cannot stand for a
// person at a terminal (host.PersonAtTerminal: no controlling terminal, or
// descending from a host, its server or the MCP client that launched one),
// so that an agent without a terminal cannot enroll a key of its own as
// the root.
func confirmRoot(a trust.Authenticator, stdio Stdio) error {
	if err := host.PersonAtTerminal(); err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: the first authenticator is trusted without a signature by another, so a person must enroll it in their own terminal, and %v", err)}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: the terminal: %v", err)}
	}
	defer tty.Close()
	fmt.Fprintf(tty, "no authenticator is enrolled: trust %s authenticator %q (%s) as the root of the trust store? [y/N] ",
		a.Kind, printable(a.Name), printable(a.ID))
	line, _ := bufio.NewReader(tty).ReadString('\n')
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: declined at the terminal")}
	}
	return nil
}
