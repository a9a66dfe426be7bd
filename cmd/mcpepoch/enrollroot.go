package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/trust"
)

// testBuildPerson, set only in a binary built with the test-only build tag
// mcpepochtest (testbuild.go), says whether the environment stands in for
// a person at a terminal. A product binary has no such seam.
var testBuildPerson func() bool

// confirmRoot is the person guard of a first enrollment, on every channel
// (enroll --ssh, enroll --web): the first authenticator becomes the store's
// root, trusted without any signature, so a person must be at this
// process's terminal (askAtTerminal). It refuses when the process cannot stand for one
// (approval.PersonAtTerminal: no controlling terminal, or descending from a
// host, its server or the MCP client that launched one), then asks
// question with [y/N] on /dev/tty, and returns how the person was proven
// (trust.EnrolledTerminal) for the entry.
//
// Like every terminal check it stops an agent without a terminal of its
// own, not a determined program (a pseudo-terminal it opens, detached
// with setsid): the README says so, and attestation is the real boundary.
func confirmRoot(ctx context.Context, question string, stdio Stdio) (string, error) {
	testBuild, err := askAtTerminal(ctx, question)
	var guard *notAtTerminalError
	switch {
	case errors.As(err, &guard):
		return "", &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: the first authenticator is trusted without a signature by another, so a person must enroll it in their own terminal, and %v", guard.err)}
	case err != nil:
		return "", &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: %v", err)}
	case testBuild:
		fmt.Fprintln(stdio.Err, "test build: the person guard of the first enrollment is skipped")
		return trust.EnrolledTestBuild, nil
	}
	return trust.EnrolledTerminal, nil
}

// askAtTerminal is the one terminal person check of a command (the first
// enrollment's confirmRoot, mcpepoch policy accept at terminal): it
// refuses a process that cannot stand for a person at a terminal
// (approval.PersonAtTerminal: the terminal rule approval.AtTerminal, the
// one a host's approve route runs on its sender; as a
// *notAtTerminalError), then asks question with [y/N] on /dev/tty
// and returns an error unless the answer is y or yes. It stops waiting
// for the answer when ctx is done (Ctrl-C, SIGTERM, SIGHUP: main's
// signal context), with errInterrupted. In a binary built for the tests,
// MCPEPOCH_TEST_PERSON=1 stands in for the person (testBuildPerson): then
// it asks nothing and reports testBuild. A product build has no such seam.
func askAtTerminal(ctx context.Context, question string) (testBuild bool, err error) {
	if testBuildPerson != nil && testBuildPerson() {
		return true, nil
	}
	if err := approval.PersonAtTerminal(); err != nil {
		return false, &notAtTerminalError{err: err}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("the terminal: %v", err)
	}
	defer tty.Close()
	fmt.Fprintf(tty, "%s [y/N] ", question)
	line, err := readLine(ctx, tty)
	if err != nil {
		fmt.Fprintln(tty)
		return false, err
	}
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return false, errors.New("declined at the terminal")
	}
	return false, nil
}

// errInterrupted: the question at the terminal got no answer before the
// command was interrupted or terminated.
var errInterrupted = errors.New("interrupted before an answer at the terminal")

// readLine returns the next line typed at tty (what came before the end of
// input when there is no whole line), or errInterrupted as soon as ctx is
// done. The signals that end ctx are caught for the whole process, so they
// do not interrupt the read itself: without this, Ctrl-C at the question
// (or a SIGTERM) would be ignored until a line is typed.
func readLine(ctx context.Context, tty *os.File) (string, error) {
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(tty).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		return line, nil
	case <-ctx.Done():
		return "", errInterrupted
	}
}

// notAtTerminalError is why this process cannot stand for a person at a
// terminal (approval.PersonAtTerminal).
type notAtTerminalError struct{ err error }

func (e *notAtTerminalError) Error() string { return e.err.Error() }
func (e *notAtTerminalError) Unwrap() error { return e.err }

// rootQuestion is what confirmRoot asks before a (an ssh key) becomes the root.
func rootQuestion(a trust.Authenticator) string {
	return fmt.Sprintf("no authenticator is enrolled: trust %s authenticator %q (%s) as the root of the trust store?",
		a.Kind, printable(a.Name), printable(a.ID))
}

// webRootQuestion is what confirmRoot asks before the registration page
// opens on an empty store.
func webRootQuestion(name string) string {
	return fmt.Sprintf("no authenticator is enrolled: the authenticator you register on the page, %q, becomes the root of the trust store, trusted without a signature by another. Open the page?", printable(name))
}
