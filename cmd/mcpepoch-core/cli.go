package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Stdio is where a command reads and writes. Status lines and errors go to
// Err; Out carries only machine output (--json, MCP messages for host).
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Exit statuses, documented in the README and the command doc.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitNoHost    = 3
	exitHostError = 4
	// exitAuditBroken: mcpepoch audit verify found the chain broken.
	exitAuditBroken = 5
)

// exitError carries an exit status and hint lines for report.
type exitError struct {
	code  int
	err   error
	hints []string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// silentExit ends the command with a status and no further message: what
// there was to say has been printed.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }
func (e silentExit) ExitCode() int { return int(e) }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// Run runs the mcpepoch command line args (without the program name).
func Run(ctx context.Context, args []string, stdio Stdio) error {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, usage)
		return silentExit(exitUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "record":
		return runRecord(ctx, rest, stdio)
	case "host":
		return runHost(ctx, rest, stdio)
	case "status":
		return runStatus(ctx, rest, stdio)
	case "restart":
		return runRestart(ctx, rest, stdio)
	case "approve":
		return runApprove(ctx, rest, stdio)
	case "enroll":
		return runEnroll(ctx, rest, stdio)
	case "authenticators":
		return runAuthenticators(rest, stdio)
	case "grants":
		return runGrants(rest, stdio)
	case "policy":
		return runPolicy(ctx, rest, stdio)
	case "revoke":
		return runRevoke(ctx, rest, stdio)
	case "audit":
		return runAudit(rest, stdio)
	case "identity":
		return runIdentity(ctx, rest, stdio)
	case "template":
		return runTemplate(rest, stdio)
	case "init":
		return runInit(ctx, rest, stdio)
	case "doctor":
		return runDoctor(ctx, rest, stdio)
	case "dev":
		return runDev(ctx, rest, stdio)
	case "version", "--version", "-version":
		return runVersion(rest, stdio)
	case "help", "-h", "-help", "--help":
		if cmd == "help" && len(rest) > 0 {
			return runHelp(ctx, rest, stdio)
		}
		fmt.Fprint(stdio.Out, usage)
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q", cmd), hints: []string{"run 'mcpepoch help' for the list of commands"}}
}

const usage = `usage: mcpepoch <command> [flags]

  init [flags]              wire this project: mcpepoch.toml, build hook, dev task, client configs
  dev [flags]               watch the sources, build, record, restart: the whole loop in one terminal
  doctor                    one line per problem with the wiring, each with its fix
  record [flags]            post-build hook: hash the build, write .mcpepoch/manifest.toml,
                            signal every host of this project
  host [flags] -- CMD...    stdio MCP gateway: run CMD under execution epochs
  status [--json]           what every host of this project is running
  restart                   restart every host's server under a new epoch now
  approve [flags]           review what a host runs and grant tools to an agent run
  enroll --web|--ssh KEY    enroll an authenticator that proves a person (presence)
  authenticators            list the enrolled authenticators
  grants [--live] [--json]  list grants, live and revoked
  policy [show|accept]      the project's policy floor beside mcpepoch.toml; accept a weakening as a person
  revoke GRANT-ID           end a grant (a unique prefix of its id is enough)
  audit verify|show         check the audit log's hash chain, or show its timeline
  identity [-- CMD...]      explain every input hashed into a launch command's identity
  template NAME             print a Taskfile, Makefile or client-config snippet
  version [--json]          print the version

Run 'mcpepoch <command> -h' for a command's flags.
`

// report prints err the way every mcpepoch command does and returns the exit
// status: "mcpepoch: error: …" and "mcpepoch: hint: …" lines on stderr.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var se silentExit
	if errors.As(err, &se) {
		return int(se)
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	// An error can carry what a host or a server said: each of its lines
	// goes through printableText.
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "mcpepoch: error: %s\n", printableText(line))
	}
	var ee *exitError
	if errors.As(err, &ee) {
		for _, h := range ee.hints {
			fmt.Fprintf(w, "mcpepoch: hint: %s\n", printableText(h))
		}
	}
	var coder interface{ ExitCode() int }
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	var ie *build.InputError
	var ce *manifest.CorruptError
	var cfg *config.Error
	if errors.As(err, &ie) || errors.As(err, &ce) || errors.As(err, &cfg) {
		return exitUsage
	}
	return exitFailure
}

// hostErrorLine is the line for a Broadcast result with an error: a host
// that failed to answer, or (no socket) the project's socket directory.
func hostErrorLine(root string, r notify.Result) string {
	if r.Socket == "" {
		dir, err := notify.Dir(root)
		if err != nil {
			dir = "of " + root
		}
		return fmt.Sprintf("socket directory %s: error: %s", printable(dir), printableText(r.Err.Error()))
	}
	return fmt.Sprintf("host %s: error: %s", printable(shortRun(r.Response.Run, r.Socket)), printableText(r.Err.Error()))
}

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

// newFlags returns a FlagSet for subcommand name that reports errors as
// usage errors and prints its help to w, flags spelled --name as the README
// spells them (the flag package accepts both - and --).
func newFlags(name string, w io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpepoch "+name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: mcpepoch %s %s\n\n", name, synopsis)
		printDefaults(w, fs)
	}
	return fs
}

// printDefaults is flag.PrintDefaults with "--" before each flag's name
// ("-" before a one-letter name):
// one "  --name type" line per flag, then its usage, with the default
// value when it is not the zero value.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // -q, not --q
		}
		if name != "" {
			line += " " + name
		}
		text = strings.ReplaceAll(text, "\n", "\n    \t")
		switch f.DefValue {
		case "", "false", "0", "0s", "[]":
		default:
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				text += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				text += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, text)
	})
}

// parseFlags parses args, turning a flag error into a usage exit.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return silentExit(exitUsage)
	}
	return nil
}

// shortLong defines the bool flag -short and its long spelling --long,
// both setting v.
func shortLong(fs *flag.FlagSet, v *bool, short, long, usage string) {
	fs.BoolVar(v, short, false, usage)
	fs.BoolVar(v, long, false, "same as -"+short)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// painter colours status lines on a terminal only, and never when NO_COLOR
// is set (https://no-color.org).
type painter struct{ on bool }

func newPainter(w io.Writer) painter {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return painter{}
	}
	return painter{on: isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())}
}

func (p painter) paint(attr color.Attribute, s string) string {
	if !p.on {
		return s
	}
	c := color.New(attr)
	c.EnableColor()
	return c.Sprint(s)
}

func (p painter) ok(s string) string   { return p.paint(color.FgGreen, s) }
func (p painter) warn(s string) string { return p.paint(color.FgYellow, s) }
func (p painter) bad(s string) string  { return p.paint(color.FgRed, s) }

// writeJSON writes v as indented JSON: what every --json flag prints.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// count is "1 tool", "2 tools": n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
