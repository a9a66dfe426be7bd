// Command mcpepoch is the front of the mcpepoch install: it runs `mcpepoch
// version` and `mcpepoch record` (the build hook, which every build
// starts) itself, and becomes mcpepoch-core, the full command beside it,
// for everything else: same process id, arguments (argv[0] included),
// environment and open descriptors, through execve(2). Clients start
// `mcpepoch host`, and a host's pid is in status and in its records.
//
// The front links only what those two commands need, so that it starts
// about as fast as an empty Go program (its dependency test lists what it
// must not link). The full usage is the core's: `mcpepoch help`.
//
// The core is found beside this executable (symlinks resolved, so that
// npm's and Homebrew's links find the real one), never through PATH or
// the environment: whoever can set either would choose the code that runs.
// Before the exec the front reads the core's build information
// (cli.CheckCore): a missing core, or one from another build, ends the
// command with exit 2, the facts compared and the fix.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "record", "version", "--version", "-version":
			os.Exit(run(args))
		}
	}
	err := execCore()
	if len(args) == 0 || len(args) == 1 && isHelp(args[0]) {
		// Help cannot come from a core that cannot be run: the list of
		// commands, then why the rest will not run.
		os.Stderr.WriteString(cli.Usage)
	}
	os.Exit(cli.Report(os.Stderr, err))
}

// isHelp reports whether arg asks for the list of commands.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// run runs the commands the front runs itself, as the core runs them.
// record's context ends at an interrupt, SIGTERM or SIGHUP; version has
// nothing to cancel, and takes no signal handler (signal.Notify starts a
// thread of its own, a cost at every start).
func run(args []string) int {
	stdio := cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	var err error
	if args[0] == "record" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		self, _ := os.Executable() // the core, when it is exec'd, loads its own
		selfcmd.Load(self)
		err = cli.RunRecord(ctx, args[1:], stdio)
	} else {
		err = cli.RunVersion(args[1:], stdio)
	}
	return cli.Report(os.Stderr, err)
}

// execCore replaces this process with the core beside this executable,
// telling it this build's identity (cli.FrontEnv). It returns only when
// the core cannot be run.
func execCore() error {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("cannot find this executable, beside which %s is: %v", cli.CoreName, err)}
	}
	core := filepath.Join(filepath.Dir(self), cli.CoreName)
	if err = cli.CheckCore(self, core); err == nil {
		err = syscall.Exec(core, os.Args, cli.WithFrontEnv(os.Environ(), self))
	} else if _, ok := errors.AsType[*cli.ExitError](err); ok {
		return err
	}
	what := "cannot be run"
	if errors.Is(err, fs.ErrNotExist) {
		what = "is missing"
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("%s, which runs every command but version and record, %s beside %s (%v): %s",
		core, what, self, err, cli.InstallFixFor(self))}
}
