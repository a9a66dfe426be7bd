package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fatih/color"

	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// Stdio is where a command reads and writes (cli.Stdio).
type Stdio = cli.Stdio

// Exit statuses, documented in the README and the command doc (cli's).
const (
	exitOK          = cli.ExitOK
	exitFailure     = cli.ExitFailure
	exitUsage       = cli.ExitUsage
	exitNoHost      = cli.ExitNoHost
	exitHostError   = cli.ExitHostError
	exitStarting    = cli.ExitStarting
	exitAuditBroken = cli.ExitAuditBroken
)

// exitError carries an exit status and hint lines for report.
type exitError struct {
	code  int
	err   error
	hints []string
}

func (e *exitError) Error() string       { return e.err.Error() }
func (e *exitError) Unwrap() error       { return e.err }
func (e *exitError) ExitCode() int       { return e.code }
func (e *exitError) HintLines() []string { return e.hints }

// silentExit ends the command with a status and no further message: what
// there was to say has been printed.
type silentExit = cli.SilentExit

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// command runs one subcommand with its arguments (after its name). Every
// command ends when ctx does (an interrupt, SIGTERM or SIGHUP: main).
type command func(ctx context.Context, args []string, stdio Stdio) error

// commands is the command line: every subcommand by the name it is run
// as, in one table, as localapi.Routes is the local API's. help is Run's.
var commands = map[string]command{
	"init":           runInit,
	"dev":            runDev,
	"doctor":         runDoctor,
	"record":         cli.RunRecord,
	"host":           runHost,
	"status":         runStatus,
	"restart":        runRestart,
	"approve":        runApprove,
	"enroll":         runEnroll,
	"authenticators": runAuthenticators,
	"grants":         runGrants,
	"revoke":         runRevoke,
	"policy":         runPolicy,
	"audit":          runAudit,
	"identity":       runIdentity,
	"template":       runTemplate,
	"version":        cli.RunVersion,
	"--version":      cli.RunVersion,
	"-version":       cli.RunVersion,
}

// Run runs the mcpepoch command line args (without the program name).
func Run(ctx context.Context, args []string, stdio Stdio) error {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, usage)
		return silentExit(exitUsage)
	}
	name, rest := args[0], args[1:]
	if run, ok := commands[name]; ok {
		return run(ctx, rest, stdio)
	}
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(rest) > 0 {
			return runHelp(ctx, rest, stdio)
		}
		fmt.Fprint(stdio.Out, usage)
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q", name), hints: []string{"run '" + selfcmd.Name() + " help' for the list of commands"}}
}

// usage is the list of commands (cli.Usage).
const usage = cli.Usage

// report prints err and returns the exit status (cli.Report, the one
// place that maps errors to exit statuses).
func report(w io.Writer, err error) int { return cli.Report(w, err) }

// runHelp is "mcpepoch help CMD [SUB]": CMD's help, the text "mcpepoch CMD
// [SUB] -h" prints on stderr, printed on stdout instead, where asked-for
// help belongs (so that it pipes into a pager).
func runHelp(ctx context.Context, args []string, stdio Stdio) error {
	if len(args) > 2 || (len(args) == 2 && args[0] != "audit") {
		return usageError("help takes one command, got %q", args)
	}
	switch args[0] {
	case "help":
		fmt.Fprint(stdio.Out, usage)
		return nil
	}
	return Run(ctx, append(args, "-h"), Stdio{In: stdio.In, Out: stdio.Out, Err: stdio.Out})
}

// newFlags is cli.NewFlags.
func newFlags(name string, w io.Writer, synopsis string) *flag.FlagSet {
	return cli.NewFlags(name, w, synopsis)
}

// printDefaults is cli.PrintDefaults.
func printDefaults(w io.Writer, fs *flag.FlagSet) { cli.PrintDefaults(w, fs) }

// parseFlags is cli.ParseFlags.
func parseFlags(fs *flag.FlagSet, args []string) error { return cli.ParseFlags(fs, args) }

// shortLong is cli.ShortLong.
func shortLong(fs *flag.FlagSet, v *bool, short, long, usage string) {
	cli.ShortLong(fs, v, short, long, usage)
}

// stringList is a repeatable string flag.
type stringList = cli.StringList

// painter colours status lines on a terminal only (cli.Painter).
type painter struct{ cli.Painter }

func newPainter(w io.Writer) painter { return painter{cli.NewPainter(w)} }

func (p painter) ok(s string) string   { return p.Ok(s) }
func (p painter) warn(s string) string { return p.Warn(s) }
func (p painter) bad(s string) string  { return p.Bad(s) }

// writeJSON is cli.WriteJSON.
func writeJSON(w io.Writer, v any) error { return cli.WriteJSON(w, v) }

// count is "1 tool", "2 tools": n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// errorf is fmt.Errorf, or errors.New without arguments.
func errorf(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}

func (p painter) paint(attr color.Attribute, s string) string { return p.Paint(attr, s) }
