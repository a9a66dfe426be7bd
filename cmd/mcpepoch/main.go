// Command mcpepoch keeps an MCP server's catalog revision, execution epoch
// and grants apart while its developer rebuilds it. It is one binary:
// go install github.com/mcpepoch/mcpepoch/cmd/mcpepoch@latest is a whole
// install.
//
// Usage:
//
//	mcpepoch init [flags]            wire the project: mcpepoch.toml, build hook, dev task, client configs
//	mcpepoch dev [flags]             watch the sources, build, record, restart: the whole loop
//	mcpepoch doctor                  one line per wiring problem, with its fix (exit 1 when any)
//	mcpepoch record [flags]          post-build hook: hash, write the run manifest, signal hosts
//	mcpepoch host [flags] -- CMD…    stdio MCP gateway that runs CMD under execution epochs
//	mcpepoch status [--json]         what every host of this project is running
//	mcpepoch restart                 restart every host's server under a new epoch now
//	mcpepoch approve [flags]         review and grant tools to an agent run, for the running epoch
//	mcpepoch grants | revoke ID      list grants; end one
//	mcpepoch audit verify | show     check the audit log's chain; show its timeline
//	mcpepoch identity [-- CMD…]      explain every input of a launch command's identity
//	mcpepoch template NAME           print a Taskfile, Makefile or client-config snippet
//	mcpepoch version
//
// Exit codes: 0 ok; 1 unexpected failure, or approve made no grant though
// a person was asked (declined, or interrupted at a question); 2 usage or
// bad input (a missing entry file, a corrupt manifest or mcpepoch.toml); 3
// --require-host and no host is listening; 4 --require-host and a host
// reported an error (or approve/restart/status failed at a host, one not
// answering included; for status also a host that gave up, or whose server
// failed the handshake); 5 audit verify found the chain broken; 6 status
// found a host whose server is still starting.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

func main() { os.Exit(main1()) }

// becomeSubreaper makes a process that runs mcpepoch host a child
// subreaper (childproc.BecomeSubreaper), so that what the server started and
// left behind is reparented to it and stopped with it. It is
// process-wide, so it is done here, where the process is known to be the
// host's alone, never in Run, which tests call inside a process that has
// children of its own for the host's reaper to steal.
func becomeSubreaper(args []string) {
	if len(args) == 0 || args[0] != "host" {
		return
	}
	if err := childproc.BecomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "mcpepoch host: note: %v\n", err)
	}
}

// main1 runs the command and returns its exit status; tests call it through
// testscript as the "mcpepoch" command.
func main1() int {
	self, _ := os.Executable()
	selfcmd.Load(self)
	// SIGHUP (the terminal closed) ends a command as SIGTERM does: a host
	// stops its server's whole process group instead of dying at once and
	// leaving what the group's leader started behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	becomeSubreaper(os.Args[1:])
	err := Run(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	return report(os.Stderr, err)
}
