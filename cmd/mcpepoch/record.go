package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// recordOutput is what record --json prints on stdout.
type recordOutput struct {
	Manifest string         `json:"manifest"`
	Build    manifest.Build `json:"build"`
	Label    string         `json:"label"`
	Command  []string       `json:"command,omitempty"`
	Dir      string         `json:"dir"`
	Changed  []string       `json:"changed"`
	// FirstBuild is set when no build was recorded before: everything in
	// Changed is new.
	FirstBuild bool                `json:"firstBuild,omitempty"`
	Artifacts  []manifest.Artifact `json:"artifacts"`
	Inferred   []string            `json:"inferred,omitempty"`
	// Source says so when the server runs from source (go run, tsx, …).
	Source string        `json:"source,omitempty"`
	Hosts  []hostOutcome `json:"hosts"`
}

type hostOutcome struct {
	Socket   string           `json:"socket"`
	Run      string           `json:"run,omitempty"`
	Label    string           `json:"label,omitempty"`
	Result   localapi.Outcome `json:"result"`
	OldEpoch string           `json:"oldEpoch,omitempty"`
	NewEpoch string           `json:"newEpoch,omitempty"`
	OldPID   int              `json:"oldPid,omitempty"`
	NewPID   int              `json:"newPid,omitempty"`
	Error    string           `json:"error,omitempty"`
	// GrantsRevoked counts grants of the ended epoch the host revoked.
	GrantsRevoked int `json:"grantsRevoked"`
}

func runRecord(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("record", stdio.Err, "[flags]")
	dirFlag := fs.String("dir", ".", "project root: where mcpepoch.toml, lockfiles and .mcpepoch/ are")
	label := fs.String("label", "", "server label, e.g. inventory-local (default: label in mcpepoch.toml, else the directory name)")
	entry := fs.String("entry", "", "entry file the runtime loads, e.g. dist/server.js (default: inferred from the command)")
	var lockfiles stringList
	fs.Var(&lockfiles, "lockfile", "lockfile to hash (repeatable; default: standard names found in the project root)")
	command := fs.String("command", "", "launch command, split on spaces, e.g. 'node dist/server.js' (default: command in mcpepoch.toml)")
	exitCode := fs.Int("exit-code", 0, "the build's own exit status; non-zero records a failed build and restarts nothing")
	requireHost := fs.Bool("require-host", false, "exit 3 when no host is listening, 4 when a host reports an error")
	rehash := fs.Bool("rehash", false, "ignore the stat cache and read every file of the dependency trees")
	asJSON := fs.Bool("json", false, "print what was recorded and what each host did as JSON on stdout")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for hosts to restart the server")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("record takes no arguments, got %q", fs.Args())
	}
	root, cfg, err := loadProject(*dirFlag)
	if err != nil {
		return err
	}
	spec := cfg.Spec(root)
	spec.Command, spec.BestEffort, spec.Rehash = cfg.Command, *exitCode != 0, *rehash
	if *entry != "" {
		spec.Entry = *entry
	}
	if len(lockfiles) > 0 {
		spec.Lockfiles = lockfiles
	}
	if *command != "" {
		spec.Command = strings.Fields(*command)
	}
	name := *label
	if name == "" {
		name = cfg.Label
	}
	if name == "" {
		name = filepath.Base(root)
	}

	// Waiting for the lock and hashing can take long (another record
	// holds the lock; a dependency tree is huge; a lockfile is a FIFO):
	// both give way to SIGINT or SIGTERM, and the manifest is left as is.
	unlock, err := interruptible(ctx, "waiting for the manifest lock", func() (func(), error) { return manifest.Lock(root) },
		func(unlock func()) { unlock() })
	if err != nil {
		return err
	}
	mpath := layout.Manifest(root)
	prev, err := manifest.Read(mpath)
	if err != nil && !manifest.IsNotExist(err) {
		unlock()
		var ce *manifest.CorruptError
		if errors.As(err, &ce) {
			return &exitError{code: exitUsage, err: err, hints: []string{
				"the manifest was left as it is; move it aside to start a new one: mv " + mpath + " " + mpath + ".bad",
			}}
		}
		return err
	}
	spec.Versions = prev.RuntimeVersion
	id, err := interruptible(ctx, "hashing the build", func() (*build.Identity, error) { return build.Compute(spec) }, nil)
	if err == nil && ctx.Err() != nil {
		err = interruptedError(ctx, "hashing the build")
	}
	if err != nil {
		unlock()
		var ee *exitError
		if errors.As(err, &ee) && ee.code == exitFailure {
			ee.hints = append(ee.hints, mpath+" was left as it was")
		}
		return err
	}
	now := time.Now()
	m := manifest.New(name, epoch.NewBuildID(now), now, *exitCode, id, prev)
	err = manifest.Write(mpath, m)
	unlock()
	if err != nil {
		return err
	}

	p := newPainter(stdio.Err)
	out := recordOutput{Manifest: mpath, Build: m.Build, Label: m.Label, Command: m.Command, Dir: m.Dir,
		Changed: m.Changed(), FirstBuild: prev == nil, Source: id.Source, Artifacts: m.Artifacts, Inferred: m.Inferred, Hosts: []hostOutcome{}}
	if out.Changed == nil {
		out.Changed = []string{}
	}
	failed := *exitCode != 0
	switch {
	case failed:
		fmt.Fprintf(stdio.Err, "%s\n", p.bad(fmt.Sprintf("build failed (exit %d): running server unchanged", *exitCode)))
	case out.FirstBuild:
		fmt.Fprintf(stdio.Err, "build complete: first build recorded\n")
	case len(out.Changed) == 0:
		fmt.Fprintf(stdio.Err, "build complete: nothing changed\n")
	default:
		fmt.Fprintf(stdio.Err, "build complete: %s changed\n", strings.Join(out.Changed, ", "))
	}
	if id.Source != "" {
		fmt.Fprintf(stdio.Err, "note: %s\n", id.Source)
	}

	req := notify.Request{Type: localapi.TypeBuildComplete, Build: string(m.Build.ID), Manifest: mpath, ExitCode: *exitCode}
	if failed {
		req.Type = localapi.TypeBuildFailed
	}
	results := askHosts(ctx, root, *timeout, req)
	hostErr := perHost(stdio.Err, results, func(r notify.Result) ([]string, bool) {
		o, lines := signalOutcome(p, r)
		out.Hosts = append(out.Hosts, o)
		return lines, o.Result != localapi.OutcomeError
	}) > 0
	if len(results) == 0 {
		fmt.Fprintf(stdio.Err, "%s\n", p.warn("no host listening for this project: nothing restarted"))
		if err := logBuild(root, m); err != nil {
			fmt.Fprintf(stdio.Err, "mcpepoch: warning: build log: %v\n", err)
		}
	}
	if *asJSON {
		if err := writeJSON(stdio.Out, out); err != nil {
			return err
		}
	}
	switch {
	case *requireHost && len(results) == 0:
		return silentExit(exitNoHost)
	case *requireHost && hostErr:
		return silentExit(exitHostError)
	}
	return nil
}

// interruptible runs f on a goroutine of its own and returns its result,
// or, as soon as ctx ends (SIGINT, SIGTERM), an error with exit status 1
// saying what was interrupted. f is then abandoned: it runs on until it
// returns or the process exits, and undo, when not nil, is applied to what
// it returns if it succeeds after all (a lock it took is released).
func interruptible[T any](ctx context.Context, what string, f func() (T, error), undo func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if undo != nil {
			go func() {
				if r := <-ch; r.err == nil {
					undo(r.v)
				}
			}()
		}
		var zero T
		return zero, interruptedError(ctx, what)
	}
}

// interruptedError is the error of a command stopped by ctx while doing
// what: exit status 1, and the signal (context.Cause) in the message.
func interruptedError(ctx context.Context, what string) error {
	return &exitError{code: exitFailure, err: fmt.Errorf("interrupted while %s: %v", what, context.Cause(ctx))}
}

// loadProject resolves the project root in dir and reads its mcpepoch.toml.
func loadProject(dir string) (string, *config.Config, error) {
	root, err := projectRoot(dir)
	if err != nil {
		return "", nil, err
	}
	cfg, err := config.Load(root)
	return root, cfg, err
}

// projectRoot returns dir as an absolute path with symlinks resolved, so that
// hook and host, started from different spellings of one directory, agree.
func projectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &exitError{code: exitUsage, err: fmt.Errorf("project root: %w", err)}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", usageError("project root %s: not a directory", real)
	}
	return real, nil
}

// shortRun names a host in a line: its run id, else its socket's name,
// else (a Broadcast result without a socket) the socket directory.
func shortRun(run, socket string) string {
	switch {
	case run != "":
		return run
	case socket == "":
		return "(socket directory)"
	}
	return filepath.Base(socket)
}

// revokedNote tells how many grants an epoch change revoked, if any.
func revokedNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 grant revoked (approve again: mcpepoch approve)"
	}
	return fmt.Sprintf("; %d grants revoked (approve again: mcpepoch approve)", n)
}

// logBuild appends the build to .mcpepoch/builds.jsonl when no host heard
// of it: hosts record builds in the audit log, but one writer per file, so
// the hook keeps its own hash-chained log (package audit).
func logBuild(root string, m *manifest.File) error {
	l, err := audit.Open(layout.Builds(root), nil)
	if err != nil {
		return err
	}
	defer l.Close()
	changed := m.Changed()
	if changed == nil {
		changed = []string{}
	}
	_, err = l.Append(audit.Event{Type: audit.TypeBuildRecorded, Fields: map[string]any{
		"build": m.Build.ID, "status": m.Build.Status, "exit_code": strconv.Itoa(m.Build.ExitCode),
		"changed": changed, "hosts": "none listening"}})
	return err
}

// statusLine is the status line for a host's "restarted" answer. A host
// whose server was down (it exited, or could not start) reports no old
// epoch: the line says the server started, not that one was replaced.
func statusLine(r notify.Response) string {
	if r.OldEpoch == "" {
		return fmt.Sprintf("server started: epoch %s, pid %d (none was running)%s", printable(r.NewEpoch), r.NewPID, revokedNote(r.GrantsRevoked))
	}
	return fmt.Sprintf("server restarted: epoch %s → %s, pid %d → %d%s",
		printable(r.OldEpoch), printable(r.NewEpoch), r.OldPID, r.NewPID, revokedNote(r.GrantsRevoked))
}
