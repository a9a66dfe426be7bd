//go:build unix

package testenv

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// sessionWatchEnv marks the process OwnSession starts to pass a terminal's
// interrupt on.
const sessionWatchEnv = "MCPEPOCH_TESTENV_INTERRUPT_WATCH"

// tty is the terminal go test ran in, opened before OwnSession left its
// session (Missing writes its skips there); nil without one.
var tty *os.File

// OwnSession makes the test process the leader of a session of its own,
// as a person's terminal is. The person checks (package approval) take
// every ancestor of a running host within its session for that host's
// launching side, and refuse a client or approver below it: go test runs
// the test processes of several packages side by side under one go
// command, so without this each package's hosts would make the go command
// part of their launching side and the other packages' MCP clients (the
// test processes) would count as an agent's. Call it first in TestMain.
//
// A process that leaves the terminal's session no longer gets its Ctrl-C:
// OwnSession first starts a copy of the test binary that stays in the
// terminal's process group and passes an interrupt on to this process's
// group, and ends with this process. Where the process leads a process
// group already (run directly from a shell), it stays where it is.
func OwnSession() {
	if os.Getenv(sessionWatchEnv) == "1" {
		watchInterrupt()
	}
	if f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		tty = f
	}
	if unix.Getpgrp() == os.Getpid() {
		return // setsid(2) would fail with EPERM
	}
	if tty != nil {
		w := exec.Command(os.Args[0])
		w.Env = append(os.Environ(), sessionWatchEnv+"=1")
		in, err := w.StdinPipe()
		if err == nil && w.Start() == nil {
			// The watcher's standard input stays open, and reachable (a
			// collected file is closed), for as long as it runs: this
			// process's life.
			go func() { w.Wait(); in.Close() }()
		}
	}
	unix.Setsid()
}

// watchInterrupt is the watcher OwnSession starts: on SIGINT it sends
// SIGINT to its parent's process group (the test process leads it), and
// it exits when its parent closes its standard input.
func watchInterrupt() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(ended) }()
	select {
	case <-sig:
		syscall.Kill(-os.Getppid(), syscall.SIGINT)
	case <-ended:
	}
	os.Exit(0)
}
