package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	buildfiles "github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/wire"
)

func runInit(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("init", stdio.Err, "[flags]")
	dirFlag := fs.String("dir", ".", "project root")
	yes := fs.Bool("yes", false, "write without asking (scripts)")
	dry := fs.Bool("dry-run", false, "show what would be written and write nothing")
	var clients stringList
	fs.Var(&clients, "client", "client config to write: claude-code, vscode, cursor, claude-desktop; repeatable (default: the first three)")
	command := fs.String("command", "", "launch command, split on spaces (default: guessed from the build files, or command in mcpepoch.toml)")
	label := fs.String("label", "", "server label (default: label in mcpepoch.toml, else guessed)")
	runner := fs.String("build-tool", "task", "build tool to wire when the project has neither a Taskfile nor a Makefile: task or make")
	self := fs.String("mcpepoch", "", "the mcpepoch the client configs launch (default: this one, by absolute path)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("init takes no arguments, got %q", fs.Args())
	}
	if *runner != "task" && *runner != "make" {
		return usageError("--build-tool %q: want task or make", *runner)
	}
	root, err := projectRoot(*dirFlag)
	if err != nil {
		return err
	}
	p, err := buildfiles.Read(root)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	toolNote := ""
	if !flagSet(fs, "build-tool") && p.Taskfile == nil && p.Makefile == nil {
		*runner, toolNote = pickBuildTool()
	}
	o := wire.Options{Runner: *runner, Label: *label, Command: strings.Fields(*command)}
	if o.Clients, err = parseClients(clients); err != nil {
		return err
	}
	o.UserConfigDir, _ = os.UserConfigDir()
	var note string
	o.Hook, o.Mcpepoch, note, err = selfPaths(root, *self)
	if err != nil {
		return err
	}
	w, err := wire.Wire(p, o)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if toolNote != "" {
		w.Notes = append(w.Notes, toolNote)
	}
	showPlan(stdio.Err, w, runs(p, w.Plan), note)
	if len(w.Changes) == 0 {
		fmt.Fprintln(stdio.Err, "nothing to change: the project is wired")
		return nil
	}
	for _, c := range w.Changes {
		if err := writeDiff(stdio.Out, c); err != nil {
			return err
		}
	}
	if *dry {
		verb := "left as they are"
		if len(w.Changes) == 1 {
			verb = "left as it is"
		}
		fmt.Fprintf(stdio.Err, "dry run: %s %s\n", files(len(w.Changes)), verb)
		return nil
	}
	if err := confirmAndWrite(ctx, stdio, w.Changes, *yes); err != nil {
		return err
	}
	nextSteps(stdio.Err, w, selfName(o.Hook))
	return nil
}

// confirmAndWrite asks before writing changes (unless yes), writes them
// all (applyAll), and then names each file written, up to the first that
// failed; the error is askToWrite's or applyAll's.
func confirmAndWrite(ctx context.Context, stdio Stdio, changes []wire.Change, yes bool) error {
	if !yes {
		if err := askToWrite(ctx, stdio, len(changes)); err != nil {
			return err
		}
	}
	n, err := applyAll(changes)
	for _, c := range changes[:n] {
		fmt.Fprintf(stdio.Err, "wrote %s\n", c.Rel)
	}
	return err
}

// askToWrite asks the person at stdio's terminal whether to write n
// files; nil means yes. Ctrl-C, SIGTERM or SIGHUP at the question (ctx,
// main's signal context) ends init at once, writing nothing.
func askToWrite(ctx context.Context, stdio Stdio, n int) error {
	if !isTerminal(stdio.In) {
		return usageError("init asks before writing and stdin is not a terminal: pass --yes to write, or --dry-run")
	}
	fmt.Fprintf(stdio.Err, "write %s? [y/N] ", files(n))
	line, err := newKeyReader(ctx, bufio.NewReader(stdio.In), stdio.In).line()
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(stdio.Err)
		return &exitError{code: exitFailure, err: fmt.Errorf("%w: nothing written", err)}
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintln(stdio.Err, "nothing written")
		return silentExit(exitFailure)
	}
	return nil
}

// parseClients returns the clients the --client flags name, each flag a
// comma-separated list, in order; nil when none is given. An unknown name
// is a usage error.
func parseClients(flags []string) ([]wire.Client, error) {
	var out []wire.Client
	for _, c := range flags {
		for _, name := range strings.Split(c, ",") {
			cl, err := wire.ParseClient(strings.TrimSpace(name))
			if err != nil {
				return nil, usageError("--client: %v", err)
			}
			out = append(out, cl)
		}
	}
	return out, nil
}

// selfPaths returns how the build files call mcpepoch (hook) and what the
// client configs launch (an absolute path): mcpepoch installed in the
// project's node_modules by its .bin link, else this mcpepoch (self) by
// its absolute path, also when PATH finds it:
// the PATH of a shell where `go install` put mcpepoch is not the PATH of a
// desktop client, an editor or an agent's sandbox that runs the build.
func selfPaths(root, override string) (hook, client, note string, err error) {
	if override != "" {
		abs, err := filepath.Abs(override)
		return abs, abs, "", err
	}
	exe, err := self()
	if err != nil {
		return "", "", "", err
	}
	bin := filepath.Join(root, "node_modules", ".bin", "mcpepoch")
	if strings.HasPrefix(exe, filepath.Join(root, "node_modules")+string(filepath.Separator)) {
		if _, err := os.Stat(bin); err == nil {
			return "node_modules/.bin/mcpepoch", bin, "", nil
		}
	}
	if strings.Contains(exe, string(filepath.Separator)+"_npx"+string(filepath.Separator)) {
		note = "mcpepoch runs from npx's cache, which npm may clean: install it in the project (npm i -D mcpepoch) and run init again, so that configs point at node_modules/.bin/mcpepoch"
	}
	return exe, exe, note, nil
}

// runs says what the build target runs: the commands of the Taskfile's
// task or the Makefile's recipe when it exists (the hook left out), else
// the command init writes into a new one.
func runs(p *buildfiles.Project, pl buildfiles.Plan) string {
	var cmds []string
	switch {
	case pl.Build.Runner == "task" && p.Taskfile != nil && p.Taskfile.Task(pl.Build.Target) != nil:
		for _, c := range p.Taskfile.Task(pl.Build.Target).Cmds {
			switch {
			case c.Defer:
			case c.Cmd != "":
				cmds = append(cmds, c.Cmd)
			case c.Task != "":
				cmds = append(cmds, "task "+c.Task)
			}
		}
	case pl.Build.Runner == "make" && p.Makefile != nil && p.Makefile.Target(pl.Build.Target) != nil:
		for _, l := range p.Makefile.Target(pl.Build.Target).Recipe {
			if l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), "; $(MCPEPOCH_RECORD)")); l != "" && l != "$(MCPEPOCH_RECORD)" {
				cmds = append(cmds, l)
			}
		}
	case pl.Build.Command != nil:
		return strings.Join(pl.Build.Command, " ")
	}
	if len(cmds) == 0 {
		return "nothing to build"
	}
	return strings.Join(cmds, "; ")
}

func showPlan(w io.Writer, wr *wire.Wiring, build, note string) {
	pl := wr.Plan
	kind := string(pl.Kind) + ", "
	if pl.Kind == buildfiles.KindOther {
		kind = "" // no go.mod, package.json or pyproject.toml to tell
	}
	fmt.Fprintf(w, "server %s: %slaunched as %s\n", printable(pl.Label), kind, printable(strings.Join(pl.Command, " ")))
	fmt.Fprintf(w, "build: %s %s (%s)\n", pl.Build.Runner, pl.Build.Target, printable(build))
	for _, r := range pl.Reasons {
		fmt.Fprintf(w, "  %s\n", printable(r))
	}
	for _, n := range wr.Notes {
		fmt.Fprintf(w, "note: %s\n", printable(n))
	}
	if note != "" {
		fmt.Fprintf(w, "note: %s\n", note)
	}
}

// writeDiff prints the change as a unified diff (a new file against
// /dev/null).
func writeDiff(w io.Writer, c wire.Change) error {
	from := "a/" + c.Rel
	if c.Old == nil {
		from = "/dev/null"
	}
	d := difflib.UnifiedDiff{A: splitLines(c.Old), B: splitLines(c.New),
		FromFile: from, ToFile: "b/" + c.Rel, Context: 3}
	if c.Old == nil {
		d.A = nil
	}
	s, err := difflib.GetUnifiedDiffString(d)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, err = io.WriteString(w, s)
	return err
}

// splitLines splits b after each newline, for difflib (whose SplitLines
// adds an empty last line).
func splitLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// apply writes one change atomically, keeping the file's mode, after
// copying the old content beside it when the change asks for a backup.
// applyAll writes every change in order and returns how many it wrote:
// all of them, or those before the one whose error it returns. It writes
// nothing on stdout or stderr meanwhile: a reader that went away (init |
// head) ends the process with SIGPIPE at its next write there, which must
// come after the last file, never between two, so that a project is never
// left half-wired.
func applyAll(changes []wire.Change) (int, error) {
	for i, c := range changes {
		if err := apply(c); err != nil {
			return i, err
		}
	}
	return len(changes), nil
}

func apply(c wire.Change) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(c.Path); err == nil {
		mode = fi.Mode().Perm()
	}
	if c.Backup {
		bak := backupPath(c.Path)
		if err := atomicfile.Write(bak, c.Old, mode); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(c.Path, c.New, mode)
}

// backupPath is path.bak, or path.bak.N for the first N free.
func backupPath(path string) string {
	bak := path + ".bak"
	for i := 1; ; i++ {
		if _, err := os.Lstat(bak); err != nil {
			return bak
		}
		bak = fmt.Sprintf("%s.bak.%d", path, i)
	}
}

func nextSteps(w io.Writer, wr *wire.Wiring, self string) {
	fmt.Fprintln(w, "next:")
	if wr.Plan.Build.Runner == "task" {
		if _, err := exec.LookPath("task"); err != nil {
			fmt.Fprintf(w, "  get go-task first: task dev and %s dev run the Taskfile with it, and it is not on PATH: %s\n", self, goTaskHowTo)
		}
	}
	fmt.Fprintf(w, "  %s dev      rebuild on every change and restart the server (%s dev)\n", wr.Plan.Build.Runner, self)
	fmt.Fprintln(w, "  connect the client: Claude Code reads .mcp.json, VS Code .vscode/mcp.json, Cursor .cursor/mcp.json")
	fmt.Fprintf(w, "  %s doctor   check the wiring\n", self)
}

// selfName is how the person runs mcpepoch in the project: npx mcpepoch
// when the hook is the project's npm install (hook, from selfPaths),
// which puts no mcpepoch on PATH; else mcpepoch.
func selfName(hook string) string {
	if hook == "node_modules/.bin/mcpepoch" {
		return "npx mcpepoch"
	}
	return "mcpepoch"
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// goTaskHowTo says how to get go-task with or without Go.
const goTaskHowTo = "go install github.com/go-task/task/v3/cmd/task@v3.54.0, your package manager's go-task (brew install go-task), " +
	"or npm i -D @go-task/cli (its install downloads task from GitHub releases)"

// pickBuildTool chooses the build tool for a project with no build file:
// go-task when its CLI is on PATH, else make when that is, else go-task
// still, with a note that says how to get it.
func pickBuildTool() (runner, note string) {
	if _, err := exec.LookPath("task"); err == nil {
		return "task", ""
	}
	if _, err := exec.LookPath("make"); err == nil {
		return "make", "the go-task CLI is not on PATH and make is: wiring a Makefile (pass --build-tool task for a Taskfile; go-task comes with " + goTaskHowTo + ")"
	}
	return "task", "the go-task CLI is not on PATH, and task build and task dev need it: install it with " + goTaskHowTo + "; or install make and run init with --build-tool make"
}

// files is "1 file" or "N files".
func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}
