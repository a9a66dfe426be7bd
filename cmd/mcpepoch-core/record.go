package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/checkup"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/hook"
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
	Source string `json:"source,omitempty"`
	// TreesFrom is the run id of the host whose current tree digests were
	// used instead of walking the trees (hook.Build.TreesFrom).
	TreesFrom string        `json:"treesFrom,omitempty"`
	Hosts     []hostOutcome `json:"hosts"`
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
	// Changed is what the host found changed against the running epoch,
	// the environment as the host sees it included.
	Changed []string `json:"changed,omitempty"`
}

// recordGCPercent is the collector's GOGC for the rest of a record: a
// warm record allocates a few MB (the stat caches and one walk's records)
// and exits, and at the default of 100 one collection, with its workers on
// the cores the walk uses, ran before it did. At 800 the first comes at
// 32 MB of heap, past a warm record of 20,000 files; larger trees are
// still collected. GOGC set in the environment is left alone.
const recordGCPercent = 800

func runRecord(ctx context.Context, args []string, stdio Stdio) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(recordGCPercent))
	}
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
	var quiet, verbose bool
	shortLong(fs, &quiet, "q", "quiet", "quiet: print only what went wrong (a host's error, a server running other code than was built)")
	shortLong(fs, &verbose, "v", "verbose", "also print each input hashed into the identity, its short digest and why it counts")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("record takes no arguments, got %q", fs.Args())
	}
	flags := config.Flags{Label: *label, Entry: *entry, Lockfiles: lockfiles}
	if *command != "" {
		flags.Command = strings.Fields(*command)
	}
	set, err := resolveProject(*dirFlag, flags)
	if err != nil {
		return err
	}
	spec := hook.Spec{Root: set.Root, Label: set.Label, Identity: set.Spec, ExitCode: *exitCode, Timeout: *timeout}
	spec.Identity.Rehash = *rehash
	p := newPainter(stdio.Err)
	talk := stdio.Err // the lines -q leaves out
	if quiet {
		talk = io.Discard
	}
	var out recordOutput
	spec.Recorded = func(b *hook.Build) {
		out = printBuild(talk, p, b)
		if verbose {
			printHashed(talk, b)
		}
		var prevDone time.Time // when the previous build completed
		if b.Prev != nil {
			prevDone = b.Prev.Build.Completed
		}
		depWriteNotes(stdio.Err, p, set.Root, prevDone, b.File)
	}
	res, err := hook.Record(ctx, spec)
	if err != nil {
		return recordError(err)
	}
	if n := len(res.Hosts); n > 0 {
		fmt.Fprintln(talk, signalledLine(n))
	}
	hostErr := perHost(stdio.Err, stdio.Err, hostResults(res.Hosts), func(r notify.Result) ([]string, bool) {
		o, lines := signalOutcome(p, r)
		out.Hosts = append(out.Hosts, o)
		ok := o.Result != localapi.OutcomeError
		if quiet && ok {
			lines = lines[1:] // the outcome; what follows is running ≠ built
		}
		return lines, ok
	}) > 0
	if len(res.Hosts) == 0 {
		fmt.Fprintf(talk, "%s\n", p.warn("no host reachable over the socket; hosts watching the manifest will see this build"))
	}
	return finishRecord(stdio, out, res, spec.Root, *asJSON, *requireHost, hostErr)
}

// finishRecord prints record's --json output and says how record ends: an
// error when the build log (.mcpepoch/builds.jsonl) could not be written
// or the manifest's fsync failed, else with -require-host exit 3 when no
// host was reached and 4 when a host reported an error, else success.
func finishRecord(stdio Stdio, out recordOutput, res *hook.Result, root string, asJSON, requireHost, hostErr bool) error {
	var buildsErr error
	if res.BuildsLogErr != nil {
		// No record, no silence: the build ran but its log could not say so.
		buildsErr = fmt.Errorf("build log %s: %w: this build is not in it; a records_lost record will count it once the log can be written", layout.Builds(root), res.BuildsLogErr)
	}
	if res.ManifestSyncErr != nil && buildsErr == nil {
		buildsErr = fmt.Errorf("%w: the build is recorded and hosts were told, but a crash may lose the manifest", res.ManifestSyncErr)
	}
	if asJSON {
		if err := writeJSON(stdio.Out, out); err != nil {
			return err
		}
	}
	switch {
	case buildsErr != nil:
		return buildsErr
	case requireHost && len(res.Hosts) == 0:
		return silentExit(exitNoHost)
	case requireHost && hostErr:
		return silentExit(exitHostError)
	}
	return nil
}

// signalledLine says how many hosts the build signal reached over the
// socket (hosts it did not reach see the build in the manifest).
func signalledLine(n int) string {
	if n == 1 {
		return "signalled 1 host over the socket"
	}
	return fmt.Sprintf("signalled %d hosts over the socket", n)
}

// printBuild writes the lines saying what was recorded and returns what
// record --json reports of it, without hosts yet.
func printBuild(w io.Writer, p painter, b *hook.Build) recordOutput {
	m := b.File
	out := recordOutput{Manifest: b.Manifest, Build: m.Build, Label: m.Label, Command: m.Command, Dir: m.Dir,
		Changed: m.Changed(), FirstBuild: b.First, Source: b.Identity.Source, Artifacts: m.Artifacts, Inferred: m.Inferred, TreesFrom: b.TreesFrom, Hosts: []hostOutcome{}}
	if out.Changed == nil {
		out.Changed = []string{}
	}
	switch {
	case b.Failed():
		fmt.Fprintf(w, "%s\n", p.bad(fmt.Sprintf("build failed (exit %d): running server unchanged", m.Build.ExitCode)))
	case out.FirstBuild:
		fmt.Fprintf(w, "build complete: first build recorded\n")
	case len(out.Changed) == 0:
		fmt.Fprintf(w, "build complete: nothing changed\n")
	default:
		fmt.Fprintf(w, "build complete: %s changed\n", strings.Join(out.Changed, ", "))
	}
	if out.Source != "" {
		fmt.Fprintf(w, "note: %s\n", out.Source)
	}
	return out
}

// printHashed writes, for record -v, one line per input hashed into the
// identity (role, path, short digest, why it counts), where tree digests
// came from when a host supplied them, and what was inferred.
func printHashed(w io.Writer, b *hook.Build) {
	if b.TreesFrom != "" {
		fmt.Fprintf(w, "hashed: tree digests from host %s, kept current from file events, instead of a walk\n", printable(b.TreesFrom))
	}
	for _, a := range b.Identity.Artifacts() {
		d := a.Digest.Short()
		if a.Missing {
			d = "(absent)"
		}
		name := a.Path
		if a.Role == build.RoleEnv {
			name = "$" + name
		}
		line := fmt.Sprintf("hashed: %-9s %s %s", a.Role, printable(name), d)
		if a.Why != "" {
			line += ": " + printable(a.Why)
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range b.Identity.Inferred {
		fmt.Fprintf(w, "inferred: %s\n", printable(s))
	}
}

// depWriteNotes says which files of a dependency tree that changed since
// the previous build (completed at prevDone) were written after it, when
// no lockfile changed: not an install, but the running server keeping its
// data in the tree (server-memory does unless MEMORY_FILE_PATH is set),
// which restarts it on every build. checkup's depWrites says the same in
// mcpepoch doctor.
func depWriteNotes(w io.Writer, p painter, root string, prevDone time.Time, m *manifest.File) {
	if prevDone.IsZero() || m.Build.ExitCode != 0 {
		return
	}
	var trees []string
	for _, a := range m.Artifacts {
		switch {
		case a.Changed && a.Role == build.RoleLockfile:
			return
		case a.Changed && a.Role == build.RoleDeps && !a.Missing:
			trees = append(trees, a.Path)
		}
	}
	found := checkup.WrittenAfter(root, trees, prevDone.Add(time.Second)) // mtime granularity
	for _, t := range trees {
		for _, f := range found[t] {
			fmt.Fprintln(w, p.warn("note: "+printable(f)+" changed after the last build while no lockfile did: the running server writes into its dependency tree "+
				printable(t)+", and each write restarts it on the next build; fix: "+checkup.DepWritesFix))
		}
	}
}

// hostResults returns the exchanges behind outcomes, in order.
func hostResults(outcomes []hook.HostOutcome) []notify.Result {
	rs := make([]notify.Result, len(outcomes))
	for i, o := range outcomes {
		rs[i] = o.Result
	}
	return rs
}

// recordError gives a failed record its exit status and hints: a corrupt
// manifest is bad input (exit 2) to move aside; an interruption while
// hashing left the manifest as it was.
func recordError(err error) error {
	var me *hook.ManifestError
	var ce *manifest.CorruptError
	if errors.As(err, &me) && errors.As(me.Err, &ce) {
		return &exitError{code: exitUsage, err: err, hints: []string{
			"the manifest was left as it is; move it aside to start a new one: mv " + me.Path + " " + me.Path + ".bad",
		}}
	}
	var ie *hook.InterruptedError
	if errors.As(err, &ie) {
		ee := &exitError{code: exitFailure, err: err}
		if ie.Kept != "" {
			ee.hints = append(ee.hints, ie.Kept+" was left as it was")
		}
		return ee
	}
	return err
}

// interruptible is hook.Interruptible, for commands other than record.
func interruptible[T any](ctx context.Context, what string, f func() (T, error), undo func(T)) (T, error) {
	return hook.Interruptible(ctx, what, f, undo)
}

// resolveProject resolves the project root in dir, reads its mcpepoch.toml
// and applies the flags given over it (config.Config.Resolve). A bad flag
// value is a usage error.
func resolveProject(dir string, f config.Flags) (*config.Settings, error) {
	root, cfg, err := loadProject(dir)
	if err != nil {
		return nil, err
	}
	set, err := cfg.Resolve(root, f)
	var fe *config.FlagError
	if errors.As(err, &fe) {
		return nil, usageError("%s", fe.Error())
	}
	return set, err
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
