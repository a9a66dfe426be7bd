package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/devloop"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	buildfiles "github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/wire"
)

// devOptions are the flags of mcpepoch dev.
type devOptions struct {
	dir, build, task, target string
	watch                    stringList
	debounce, poll           time.Duration
	quiet, verbose, json     bool
}

func runDev(ctx context.Context, args []string, stdio Stdio) error {
	var f devOptions
	fs := newFlags("dev", stdio.Err, "[flags]")
	fs.StringVar(&f.dir, "dir", ".", "project root")
	fs.Var(&f.watch, "watch", "doublestar glob of sources to watch, relative to the root; repeatable, !GLOB excludes (default: the build task's sources)")
	fs.StringVar(&f.build, "build", "", "build command, run by /bin/sh -c (default: task build, else make build)")
	fs.StringVar(&f.task, "task", "", "go-task task to run as the build")
	fs.StringVar(&f.target, "target", "", "make target to run as the build")
	fs.DurationVar(&f.debounce, "debounce", 200*time.Millisecond, "how long the sources must stay quiet before a build starts")
	fs.DurationVar(&f.poll, "poll", 0, "compare the sources this often instead of using file events")
	shortLong(fs, &f.quiet, "q", "quiet", "print only build results and what the hosts did")
	shortLong(fs, &f.verbose, "v", "verbose", "also print every changed file and the build command")
	fs.BoolVar(&f.json, "json", false, "print events as JSON lines on stdout (build output goes to stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("dev takes no arguments, got %q", fs.Args())
	}
	root, err := projectRoot(f.dir)
	if err != nil {
		return err
	}
	plan, err := devPlan(root, f)
	if err != nil {
		return err
	}
	out := newDevOutput(stdio, f)
	prompt, restore := newDevPrompt(ctx, stdio, out)
	defer restore()
	out.prompt = prompt
	hosts := &devHosts{ctx: ctx, root: root, out: out, prompt: prompt}
	out.hosts = hosts
	go hosts.watch()
	for _, n := range plan.notes {
		out.line("note", n)
	}
	o := devloop.Options{
		Root: root, Watch: plan.watch, Build: plan.argv, Debounce: f.debounce, Poll: f.poll,
		Tree:   plan.tree,
		Stdout: stdio.Out, Stderr: stdio.Err,
		Event: out.event,
		Record: func(ctx context.Context, code int) {
			defer hosts.release()
			out.record(ctx, root, code)
		},
	}
	if plan.recorder != "" {
		out.line("note", plan.recorder+": the build records itself with "+selfcmd.Name()+" record, not through MCPEPOCH, so dev does not record it again (its lines are the build's output); "+
			"fix: run the hook as "+strings.TrimPrefix(wire.HookDefer, "- ")+" (Taskfile) or $(MCPEPOCH_RECORD) (Makefile), as "+selfcmd.Name()+" init writes it, for dev to record")
		o.Record = func(context.Context, int) { hosts.release() }
	}
	if f.json {
		o.Stdout = stdio.Err
	}
	if err := devloop.Run(ctx, o); err != nil {
		return usageError("%v", err)
	}
	out.line("stop", "stopped: no build left running")
	return nil
}

// devRun is what dev runs: the build command, the globs to watch, notes
// about what was chosen, and where the build runs mcpepoch record by a
// command of its own ("" when it does not).
type devRun struct {
	argv, watch, notes []string
	recorder           string
	// tree is set for a watch of the whole project (treeWatch), where
	// the build's own outputs may lie among the watched files.
	tree bool
}

// devPlan returns what dev runs.
func devPlan(root string, f devOptions) (devRun, error) {
	argv, watch, notes, p, err := devBuild(root, f)
	if err != nil {
		return devRun{}, err
	}
	tree := len(watch) > 0 && watch[0] == treeAll
	return devRun{argv: argv, watch: watch, notes: notes, recorder: selfRecorder(p, f), tree: tree}, nil
}

// selfRecorder returns FILE:LINE of a command in the build dev runs
// (--task, --target or build) that runs mcpepoch record by name or path:
// MCPEPOCH=true, which makes the hook init writes stand aside, does not
// reach it, so the build records itself. "" for none, or a --build.
func selfRecorder(p *buildfiles.Project, f devOptions) string {
	literal := func(cmd string) bool {
		return strings.Contains(cmd, "mcpepoch") && strings.Contains(cmd, " record") && !strings.Contains(cmd, "MCPEPOCH")
	}
	switch {
	case f.build != "":
	case f.target != "" || f.task == "" && p.Taskfile == nil && p.Makefile != nil:
		if t := p.Makefile.Target(first(f.target, "build")); t != nil {
			for _, l := range t.Recipe {
				if literal(l) {
					return fmt.Sprintf("%s:%d", p.Makefile.Path, t.Line)
				}
			}
		}
	case p.Taskfile != nil:
		if t := p.Taskfile.Task(first(f.task, "build")); t != nil {
			for _, c := range t.Cmds {
				if literal(c.Cmd) {
					return fmt.Sprintf("%s:%d", p.Taskfile.Path, c.Line)
				}
			}
		}
	}
	return ""
}

// devBuild returns the build command, the globs to watch, notes about
// what was chosen, and the project's build files.
func devBuild(root string, f devOptions) (argv, watch []string, notes []string, p *buildfiles.Project, err error) {
	p, err = buildfiles.Read(root)
	if err != nil {
		return nil, nil, nil, nil, &exitError{code: exitUsage, err: err}
	}
	pl := p.Plan()
	watch = append(watch, f.watch...)
	// MCPEPOCH=true makes the build's own hook (mcpepoch.Taskfile.yml,
	// mcpepoch.mk) run `true record …`: dev records the build itself.
	switch {
	case f.build != "":
		// Through sh -c, as make and go-task run their commands: quotes,
		// &&, pipes and variables mean what they mean at a prompt.
		argv = []string{"/bin/sh", "-c", f.build}
	case f.target == "" && f.task == "" && p.Taskfile == nil && p.Makefile == nil:
		return nil, nil, nil, nil, usageError("no Taskfile.yml or Makefile in %s, so no build to run: run "+selfcmd.Name()+" init to write one, or pass --build", printable(root))
	case f.target != "" || f.task == "" && p.Taskfile == nil && p.Makefile != nil:
		name := first(f.target, "build")
		if p.Makefile == nil || p.Makefile.Target(name) == nil {
			return nil, nil, nil, nil, usageError("the Makefile has no target %s: run "+selfcmd.Name()+" init, or pass --target or --build", name)
		}
		argv = []string{"make", name, "MCPEPOCH=true"}
		if len(watch) == 0 {
			var more []string
			watch, more = makeWatch(p.Makefile, name)
			notes = append(notes, more...)
		}
	default:
		name := first(f.task, "build")
		if p.Taskfile == nil || p.Taskfile.Task(name) == nil {
			return nil, nil, nil, nil, usageError("no Taskfile task %s: run "+selfcmd.Name()+" init, or pass --task, --target or --build", name)
		}
		task, err := exec.LookPath("task")
		if err != nil {
			return nil, nil, nil, nil, &exitError{code: exitUsage, err: errors.New("the go-task CLI is not on PATH"),
				hints: []string{"install it: " + goTaskHowTo + "; or pass --build 'CMD…'"}}
		}
		argv = []string{task, "--exit-code", name, "MCPEPOCH=true"}
		if len(watch) == 0 {
			for _, s := range p.Taskfile.Task(name).Sources {
				if strings.Contains(s, "{{") {
					notes = append(notes, fmt.Sprintf("source %q uses a template: not watched (pass --watch)", s))
					continue
				}
				watch = append(watch, s)
			}
		}
	}
	// Sources that name no code (mcpepoch.toml, lockfiles: what init
	// writes for a server with no build step) watch nothing a save
	// changes: the server's code is then found as if none were named.
	namesCode := func(s string) bool { return s != config.FileName && !slices.Contains(p.Lockfiles, s) }
	if len(f.watch) == 0 && !slices.ContainsFunc(watch, namesCode) {
		watch = nil
	}
	if len(watch) == 0 && pl.Kind != "" && slices.ContainsFunc(pl.Sources, namesCode) {
		// A language's build files named them; with none, dev's own walk
		// of the tree below knows more (the build's outputs, hidden files).
		watch = pl.Sources
		notes = append(notes, "watching the sources guessed from the build files: "+strings.Join(watch, " ")+" (pass --watch to choose)")
	}
	if len(watch) == 0 {
		watch = treeWatch(p)
		notes = append(notes, "the build names no sources: watching every file of the project but "+strings.Join(treeIgnored, " ")+", the version control and state directories and the build's own targets (pass --watch to choose)")
	}
	return argv, append(watch, config.FileName), notes, p, nil
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// devOutput prints dev's events: lines with a timestamp on stderr, or
// JSON lines on stdout.
type devOutput struct {
	mu     sync.Mutex
	stdio  Stdio
	f      devOptions
	p      painter
	prompt *devPrompt // renewals after a build (devprompt.go)
	hosts  *devHosts  // the hosts between builds (devhosts.go)
}

func newDevOutput(stdio Stdio, f devOptions) *devOutput {
	return &devOutput{stdio: stdio, f: f, p: newPainter(stdio.Err)}
}

// line prints one status line of kind (an event type, or "hook" for the
// hook's and hosts' lines).
func (d *devOutput) line(kind, s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f.json {
		b, _ := json.Marshal(map[string]any{"time": time.Now().UTC(), "type": kind, "message": s})
		fmt.Fprintf(d.stdio.Out, "%s\n", b)
		return
	}
	fmt.Fprintf(d.stdio.Err, "%s %s\n", d.p.paint(color.Faint, time.Now().Format("15:04:05")), s)
}

func (d *devOutput) event(e devloop.Event) {
	if d.hosts != nil {
		switch e.Type {
		case "build_started":
			d.hosts.hold()
		case "build_cancelled":
			go d.hosts.release()
		}
	}
	if d.f.json {
		d.mu.Lock()
		b, _ := json.Marshal(e)
		fmt.Fprintf(d.stdio.Out, "%s\n", b)
		d.mu.Unlock()
		return
	}
	var s string
	switch e.Type {
	case "watching":
		s = e.Message
	case "changed":
		if d.f.quiet {
			return
		}
		s = changedLine(e.Paths, d.f.verbose)
	case "build_started":
		if d.f.quiet {
			return
		}
		s = "building"
		if d.f.verbose {
			s += ": " + strings.Join(e.Command, " ")
		}
	case "build_finished":
		if *e.ExitCode == 0 {
			s = d.p.ok(fmt.Sprintf("build ok in %.1fs", e.Seconds))
		} else {
			s = d.p.bad(fmt.Sprintf("build failed (exit %d) in %.1fs", *e.ExitCode, e.Seconds))
		}
	case "build_cancelled":
		s = d.p.warn(fmt.Sprintf("build cancelled after %.1fs: %s", e.Seconds, e.Message))
	case "watch_error":
		s = d.p.warn("watch: " + e.Message)
	default:
		s = e.Type + ": " + e.Message
	}
	d.line(e.Type, s)
}

func changedLine(paths []string, all bool) string {
	if len(paths) <= 3 || all {
		return "changed: " + strings.Join(paths, ", ")
	}
	return fmt.Sprintf("changed: %s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

// record records a finished build in this process with the hook core
// (package hook), as mcpepoch record does, and prints the same lines, or,
// with --json, a "recorded" event holding what record --json prints.
func (d *devOutput) record(ctx context.Context, root string, code int) {
	lw := &lineWriter{emit: func(l string) { d.line("hook", l) }}
	defer lw.flush()
	set, err := resolveProject(root, config.Flags{})
	if err != nil {
		d.recordFailed(lw, err)
		return
	}
	spec := hook.Spec{Root: set.Root, Label: set.Label, Identity: cli.IdentityInForce(set, false), ExitCode: code, Timeout: time.Minute}
	var out cli.RecordOutput
	spec.Recorded = func(b *hook.Build) { out = cli.PrintBuild(lw, d.p.Painter, b) }
	res, err := hook.Record(ctx, spec)
	if err != nil {
		d.recordFailed(lw, cli.RecordError(err))
		return
	}
	if n := len(res.Hosts); n > 0 {
		fmt.Fprintln(lw, cli.SignalledLine(n))
	}
	perHost(lw, lw, cli.HostResults(res.Hosts), func(r notify.Result) ([]string, bool) {
		o, lines := cli.SignalOutcome(d.p.Painter, r)
		out.Hosts = append(out.Hosts, o)
		return lines, o.Result != localapi.OutcomeError
	})
	if len(res.Hosts) == 0 {
		fmt.Fprintln(lw, d.p.warn("no host reachable over the socket; hosts watching the manifest will see this build"))
	}
	lw.flush()
	if d.prompt != nil {
		d.prompt.afterBuild(ctx, cli.HostResults(res.Hosts))
	}
	if res.BuildsLogErr != nil {
		fmt.Fprintln(lw, d.p.bad(fmt.Sprintf("build log %s: %v: this build is not in it", layout.Builds(root), res.BuildsLogErr)))
	}
	if res.ManifestSyncErr != nil {
		fmt.Fprintln(lw, d.p.bad(fmt.Sprintf("%v: the build is recorded and hosts were told, but a crash may lose the manifest", res.ManifestSyncErr)))
	}
	if d.f.json {
		b, _ := json.Marshal(out)
		d.mu.Lock()
		fmt.Fprintf(d.stdio.Out, `{"time":%q,"type":"recorded","record":%s}`+"\n", time.Now().UTC().Format(time.RFC3339Nano), b)
		d.mu.Unlock()
	}
}

// recordFailed prints why a build could not be recorded, as mcpepoch
// record's error and hint lines.
func (d *devOutput) recordFailed(w io.Writer, err error) {
	var buf bytes.Buffer
	report(&buf, err)
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		fmt.Fprintln(w, d.p.bad(l))
	}
}

// lineWriter hands each complete line written to it to emit.
type lineWriter struct {
	buf  []byte
	emit func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}
