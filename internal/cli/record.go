package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/internal/depwrites"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// RecordOutput is what record --json prints on stdout.
type RecordOutput struct {
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
	Hosts     []HostOutcome `json:"hosts"`
}

type HostOutcome struct {
	Socket   string           `json:"socket"`
	Run      string           `json:"run,omitempty"`
	Label    string           `json:"label,omitempty"`
	Result   localapi.Outcome `json:"result"`
	OldEpoch string           `json:"oldEpoch,omitempty"`
	NewEpoch string           `json:"newEpoch,omitempty"`
	OldPID   int              `json:"oldPid,omitempty"`
	NewPID   int              `json:"newPid,omitempty"`
	Error    string           `json:"error,omitempty"`
	// GrantsRevoked counts grants of the ended epoch the host revoked,
	// and those of the running epoch a stricter mcpepoch.toml revoked
	// (policy_raised: the only ones when nothing restarted).
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

func RunRecord(ctx context.Context, args []string, stdio Stdio) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(recordGCPercent))
	}
	fs := NewFlags("record", stdio.Err, "[flags]")
	dirFlag := fs.String("dir", ".", "project root: where mcpepoch.toml, lockfiles and .mcpepoch/ are")
	label := fs.String("label", "", "server label, e.g. inventory-local (default: label in mcpepoch.toml, else the directory name)")
	entry := fs.String("entry", "", "entry file the runtime loads, e.g. dist/server.js (default: inferred from the command)")
	var lockfiles StringList
	fs.Var(&lockfiles, "lockfile", "lockfile to hash (repeatable; default: standard names found in the project root)")
	command := fs.String("command", "", "launch command, split on spaces, e.g. 'node dist/server.js' (default: command in mcpepoch.toml)")
	exitCode := fs.Int("exit-code", 0, "the build's own exit status; non-zero records a failed build and restarts nothing")
	requireHost := fs.Bool("require-host", false, "exit 3 when no host is listening, 4 when a host reports an error")
	rehash := fs.Bool("rehash", false, "ignore the stat cache and read every file of the dependency trees")
	asJSON := fs.Bool("json", false, "print what was recorded and what each host did as JSON on stdout")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for hosts to restart the server (one that has not acknowledged the signal within 2s, or that is silent for 5s after, is not waited for)")
	var quiet, verbose bool
	ShortLong(fs, &quiet, "q", "quiet", "quiet: print only what went wrong (a host's error, a server running other code than was built)")
	ShortLong(fs, &verbose, "v", "verbose", "also print each input hashed into the identity, its short digest and why it counts")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError("record takes no arguments, got %q", fs.Args())
	}
	flags := config.Flags{Label: *label, Entry: *entry, Lockfiles: lockfiles}
	if *command != "" {
		flags.Command = strings.Fields(*command)
	}
	root, err := ProjectRoot(*dirFlag)
	if err != nil {
		return err
	}
	var ahead *hook.Ahead
	if !*rehash {
		// The hosts answer for their trees while mcpepoch.toml is read.
		ahead = hook.AskAhead(ctx, root, *timeout)
		defer ahead.Close()
	}
	set, err := ResolveProject(root, flags)
	if err != nil {
		return err
	}
	spec := hook.Spec{Root: set.Root, Label: set.Label, Identity: IdentityInForce(set, len(lockfiles) > 0), ExitCode: *exitCode, Timeout: *timeout, Ahead: ahead}
	spec.Identity.Rehash = *rehash
	p := NewPainter(stdio.Err)
	talk := stdio.Err // the lines -q leaves out
	if quiet {
		talk = io.Discard
	}
	var out RecordOutput
	spec.Recorded = func(b *hook.Build) {
		out = PrintBuild(talk, p, b)
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
		return RecordError(err)
	}
	if n := len(res.Hosts); n > 0 {
		fmt.Fprintln(talk, SignalledLine(n))
	}
	hostErr := PerHost(stdio.Err, stdio.Err, HostResults(res.Hosts), hostLines(p, &out, spec.Root, quiet)) > 0
	if len(res.Hosts) == 0 {
		fmt.Fprintf(talk, "%s\n", p.Warn("no host reachable over the socket; hosts watching the manifest will see this build"))
	}
	return finishRecord(stdio, out, res, spec.Root, *asJSON, *requireHost, hostErr)
}

// hostLines returns what record prints of one host's answer for PerHost:
// its outcome (left out with quiet when it is no error), what the host
// found changed where the build found nothing, and running ≠ built; each
// outcome is added to out.Hosts. root is the project root the artifacts'
// relative paths start from.
func hostLines(p Painter, out *RecordOutput, root string, quiet bool) func(notify.Result) ([]string, bool) {
	return func(r notify.Result) ([]string, bool) {
		o, lines := SignalOutcome(p, r)
		out.Hosts = append(out.Hosts, o)
		switch more := hostSawMore(*out, o); {
		case len(more) == 0:
		case asRecorded(root, out.Artifacts, more):
			lines = append(lines, fmt.Sprintf("the host was running other content of %s (changed since the last build, then put back): "+
				"this build's content is the last build's, and the host went back to it", printable(strings.Join(more, ", "))))
		default:
			lines = append(lines, p.Warn(fmt.Sprintf("the host found %s changed, where this build found nothing changed: "+
				"the caches in .mcpepoch/cache/ are stale or were rewritten ("+selfcmd.Name()+" record --rehash reads every file)", printable(strings.Join(more, ", ")))))
		}
		ok := o.Result != localapi.OutcomeError
		if quiet && ok {
			lines = lines[1:] // the outcome; what follows is running ≠ built
		}
		return lines, ok
	}
}

// asRecorded reports whether each of the files named, read again from
// disk past every cache, has the digest this build recorded for it: then
// the build's caches told the truth, and a host that found them changed was
// running other content (a restart while the files differed from the last
// build, which they were put back to). A name that is no recorded file (a
// tree, one gone, one unreadable) cannot be vouched for: false, and the
// caches stay the suspects.
func asRecorded(root string, arts []manifest.Artifact, names []string) bool {
	for _, name := range names {
		i := slices.IndexFunc(arts, func(a manifest.Artifact) bool { return a.Path == name })
		if i < 0 || arts[i].Missing || arts[i].Files > 0 || arts[i].Role == build.RoleEnv {
			return false
		}
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if d, _, err := build.FileDigest(path); err != nil || d != arts[i].Digest {
			return false
		}
	}
	return true
}

// hostSawMore returns what a host that restarted the server found
// changed when the build found nothing changed: the host hashes with its
// own caches (build.Caches), so a stale or forged on-disk cache that hid
// a change from the hook shows here.
func hostSawMore(out RecordOutput, o HostOutcome) []string {
	if o.Result != localapi.OutcomeRestarted || out.FirstBuild || len(out.Changed) > 0 {
		return nil
	}
	return o.Changed
}

// finishRecord prints record's --json output and says how record ends: an
// error when the build log (.mcpepoch/builds.jsonl) could not be written
// or the manifest's fsync failed, else with -require-host exit 3 when no
// host was reached and 4 when a host reported an error, else success.
func finishRecord(stdio Stdio, out RecordOutput, res *hook.Result, root string, asJSON, requireHost, hostErr bool) error {
	var buildsErr error
	if res.BuildsLogErr != nil {
		// No record, no silence: the build ran but its log could not say so.
		buildsErr = fmt.Errorf("build log %s: %w: this build is not in it; a records_lost record will count it once the log can be written", layout.Builds(root), res.BuildsLogErr)
	}
	if res.ManifestSyncErr != nil && buildsErr == nil {
		buildsErr = fmt.Errorf("%w: the build is recorded and hosts were told, but a crash may lose the manifest", res.ManifestSyncErr)
	}
	if asJSON {
		if err := WriteJSON(stdio.Out, out); err != nil {
			return err
		}
	}
	switch {
	case buildsErr != nil:
		return buildsErr
	case requireHost && len(res.Hosts) == 0:
		return SilentExit(ExitNoHost)
	case requireHost && hostErr:
		return SilentExit(ExitHostError)
	}
	return nil
}

// SignalledLine says how many hosts the build signal reached over the
// socket (hosts it did not reach see the build in the manifest).
func SignalledLine(n int) string {
	if n == 1 {
		return "signalled 1 host over the socket"
	}
	return fmt.Sprintf("signalled %d hosts over the socket", n)
}

// PrintBuild writes the lines saying what was recorded and returns what
// record --json reports of it, without hosts yet.
func PrintBuild(w io.Writer, p Painter, b *hook.Build) RecordOutput {
	m := b.File
	out := RecordOutput{Manifest: b.Manifest, Build: m.Build, Label: m.Label, Command: m.Command, Dir: m.Dir,
		Changed: m.Changed(), FirstBuild: b.First, Source: b.Identity.Source, Artifacts: m.Artifacts, Inferred: m.Inferred, TreesFrom: b.TreesFrom, Hosts: []HostOutcome{}}
	if out.Changed == nil {
		out.Changed = []string{}
	}
	switch {
	case b.Failed():
		fmt.Fprintf(w, "%s\n", p.Bad(fmt.Sprintf("build failed (exit %d): no server restarts for it", m.Build.ExitCode)))
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
func depWriteNotes(w io.Writer, p Painter, root string, prevDone time.Time, m *manifest.File) {
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
	found := depwrites.After(root, trees, prevDone.Add(time.Second)) // mtime granularity
	for _, t := range trees {
		for _, f := range found[t] {
			fmt.Fprintln(w, p.Warn("note: "+printable(f)+" changed after the last build while no lockfile did: the running server writes into its dependency tree "+
				printable(t)+", and each write restarts it on the next build; fix: "+depwrites.Fix))
		}
	}
}

// HostResults returns the exchanges behind outcomes, in order.
func HostResults(outcomes []hook.HostOutcome) []notify.Result {
	rs := make([]notify.Result, len(outcomes))
	for i, o := range outcomes {
		rs[i] = o.Result
	}
	return rs
}

// RecordError gives a failed record its exit status and hints: a corrupt
// manifest is bad input (exit 2) to move aside; an interruption while
// hashing left the manifest as it was.
func RecordError(err error) error {
	var me *hook.ManifestError
	var ce *manifest.CorruptError
	if errors.As(err, &me) && errors.As(me.Err, &ce) {
		return &ExitError{Code: ExitUsage, Err: err, Hints: []string{
			"the manifest was left as it is; move it aside to start a new one: mv " + me.Path + " " + me.Path + ".bad",
		}}
	}
	var in *build.InputError
	if errors.As(err, &in) && in.Field == "entry" && errors.Is(in.Err, fs.ErrNotExist) {
		// record runs after the build: an entry the build did not write
		// is one the launch command names wrongly, or a build that wrote
		// elsewhere.
		return &ExitError{Code: ExitUsage, Err: err, Hints: []string{
			"the build ran and " + in.Path + " is not there: check the launch command (command, entry) in " + config.FileName + " against what the build writes; " + selfcmd.Cmd("doctor") + " names it",
		}}
	}
	var ie *hook.InterruptedError
	if errors.As(err, &ie) {
		ee := &ExitError{Code: ExitFailure, Err: err}
		if ie.Kept != "" {
			ee.Hints = append(ee.Hints, ie.Kept+" was left as it was")
		}
		return ee
	}
	return err
}
