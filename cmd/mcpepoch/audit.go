package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// auditUsage is what "mcpepoch audit -h" prints: the subcommands.
const auditUsage = `usage: mcpepoch audit <subcommand> [flags]

  verify [--log FILE]       check the audit log's hash chain (exit 5 when broken)
  show [--run R] [--epoch E] [--type T,…] [--json]
                            print the audit log's timeline

Run 'mcpepoch audit <subcommand> -h' for a subcommand's flags.
`

// runAudit checks or shows the project's audit log.
func runAudit(_ context.Context, args []string, stdio Stdio) error {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, auditUsage)
		return usageError("audit needs a subcommand: verify or show")
	}
	switch args[0] {
	case "verify":
		return runAuditVerify(args[1:], stdio)
	case "show":
		return runAuditShow(args[1:], stdio)
	case "-h", "-help", "--help":
		fmt.Fprint(stdio.Err, auditUsage)
		return flag.ErrHelp
	}
	return usageError("unknown audit subcommand %q: want verify or show", args[0])
}

func runAuditVerify(args []string, stdio Stdio) error {
	fs := newFlags("audit verify", stdio.Err, "[--dir DIR] [--log FILE]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	logFlag := fs.String("log", "", "log to verify (default .mcpepoch/audit.jsonl)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	p := *logFlag
	if p == "" {
		root, err := findRoot(*dirFlag)
		if err != nil {
			return err
		}
		p = layout.Audit(root)
	}
	opts := audit.VerifyOptions{Head: audit.HeadPath(p)}
	var noCopy error
	opts.CopyDir, noCopy = copyDirOf(p)
	var recs []audit.Record // for the checkpoints, read in the same pass
	rep, err := audit.VerifyWith(p, opts, func(r audit.Record) { recs = append(recs, r) })
	if errors.Is(err, os.ErrNotExist) && filepath.Base(p) == filepath.Base(layout.Builds("")) {
		// record writes the builds log only for a build no host heard of.
		fmt.Fprintf(stdio.Out, "no builds log at %s: every build so far reached a host (record writes it only for a build no host heard of)\n", printable(p))
		return nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return usageError("%s", noLog(p))
	}
	if err != nil {
		return err
	}
	if noCopy != nil {
		fmt.Fprintf(stdio.Out, "warning: %v: the log is compared with its head in the project only, which whoever can write the project can rewrite with it\n", noCopy)
	}
	for _, w := range append(rep.Warnings, rep.NoOutcome...) {
		fmt.Fprintf(stdio.Out, "warning: %v\n", w)
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(stdio.Out, "%v\n", pr)
	}
	if !rep.OK && onlyCopy(rep.Problems) {
		// The chain itself holds: the signed checkpoints are still
		// checked and said, then the mismatch with the copy.
		verifyCheckpoints(p, recs, stdio)
		fmt.Fprintf(stdio.Out, "%s: chain intact up to seq %d, but it does not match the copy of its head kept outside the project, %s (above): the log was rewritten, cut or appended to by something that does not keep that copy\n",
			p, rep.Last.Seq, printable(rep.CopyPath))
		return silentExit(exitAuditBroken)
	}
	if !rep.OK {
		if onlyTail(rep.Problems) {
			// The records hash-chain as they should; what follows them is
			// no record, and the host will not write after it until a
			// person looks.
			fmt.Fprintf(stdio.Out, "%s: chain intact up to seq %d; the lines after the last record are not records (above): no writer appends to the log until they are moved aside\n", p, rep.Last.Seq)
		} else {
			fmt.Fprintf(stdio.Out, "%s: chain broken: %d problem(s)\n", p, len(rep.Problems))
		}
		return silentExit(exitAuditBroken)
	}
	if err := verifyCheckpoints(p, recs, stdio); err != nil {
		return err
	}
	gaps := 0
	for _, w := range rep.Warnings {
		if w.Kind == audit.WarnRecordsLost {
			gaps++
		}
	}
	note := ""
	if gaps > 0 {
		note = fmt.Sprintf("; %d gap(s) of records that could not be written (see the warnings)", gaps)
	}
	if n := len(rep.NoOutcome); n > 0 {
		note += fmt.Sprintf("; %d call(s) with no recorded outcome (see the warnings)", n)
	}
	if rep.CopyAgrees {
		note += fmt.Sprintf("; the copy of the head kept outside the project (%s) agrees", printable(rep.CopyPath))
		if rep.Checkpoints > 0 {
			note += fmt.Sprintf(", and so do its %d signed checkpoint(s)", rep.Checkpoints)
		}
	}
	fmt.Fprintf(stdio.Out, "%s: %d records, chain intact, head seq %d %s%s\n", p, rep.Records, rep.Last.Seq, rep.Last.Hash, note)
	return nil
}

// copyDirOf returns the directory where the hosts keep the copy of the
// head of the audit log at p outside the project (layout.ProjectState),
// when p is a project's audit log (<root>/.mcpepoch/audit.jsonl); "" for
// any other log, which no writer keeps a copy of. The error says why a
// project's log has no such directory.
func copyDirOf(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", nil
	}
	root := filepath.Dir(filepath.Dir(abs))
	if abs != layout.Audit(root) {
		return "", nil
	}
	return layout.ProjectState(root)
}

// onlyCopy reports whether every problem is a mismatch with the copy of
// the head kept outside the project: the chain itself is intact.
func onlyCopy(problems []audit.Problem) bool {
	for _, pr := range problems {
		if pr.Kind != audit.ProblemCopyMismatch && pr.Kind != audit.ProblemCopyUnanchored {
			return false
		}
	}
	return len(problems) > 0
}

// onlyTail reports whether every problem is junk after the last record
// (audit.ProblemTailTooLong): the chain itself is not broken.
func onlyTail(problems []audit.Problem) bool {
	for _, pr := range problems {
		if pr.Kind != audit.ProblemTailTooLong {
			return false
		}
	}
	return len(problems) > 0
}

func runAuditShow(args []string, stdio Stdio) error {
	fs := newFlags("audit show", stdio.Err, "[--run R] [--epoch E] [--type T,…] [--json]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	run := fs.String("run", "", "only records of this agent run (prefix)")
	ep := fs.String("epoch", "", "only records of this execution epoch (prefix)")
	var types typeList
	fs.Var(&types, "type", "only records of these types, e.g. tool_called (comma-separated, or repeated)")
	asJSON := fs.Bool("json", false, "print the selected records as JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, typ := range types {
		if known := audit.Types(); !slices.Contains(known, typ) {
			return usageError("--type %q: not an audit record type (want one of %s)", typ, strings.Join(known, ", "))
		}
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	p := layout.Audit(root)
	recs, err := audit.Read(p)
	if errors.Is(err, os.ErrNotExist) {
		return noLogToShow(p, stdio)
	}
	if err != nil {
		return err
	}
	recs = audit.Select(recs, audit.Filter{Run: *run, Epoch: *ep})
	if len(types) > 0 {
		recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return !slices.Contains(types, r.Type) })
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return audit.FormatTimeline(stdio.Out, recs)
}

// typeList is audit show's --type: record types, comma-separated, the
// flag repeated adding more.
type typeList []string

func (l *typeList) String() string { return strings.Join(*l, ",") }

func (l *typeList) Set(v string) error {
	for t := range strings.SplitSeq(v, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(*l, t) {
			*l = append(*l, t)
		}
	}
	return nil
}

// noLog says that the audit log at p does not exist: no host wrote one.
func noLog(p string) string {
	return fmt.Sprintf("no audit log at %s yet: a host of the project writes it from its start (mcpepoch host)", printable(p))
}

// noLogToShow is audit show's answer when the log at p does not exist:
// an empty timeline and a note on stderr (exit 0) when nothing was ever
// written; when its head is still there the log was deleted or moved,
// which is what verify reports as a broken chain (exit 5).
func noLogToShow(p string, stdio Stdio) error {
	if _, err := os.Lstat(audit.HeadPath(p)); err == nil {
		fmt.Fprintf(stdio.Err, "no audit log at %s, but its head %s is there: the log was deleted or moved ("+selfcmd.Name()+" audit verify)\n",
			printable(p), printable(audit.HeadPath(p)))
		return silentExit(exitAuditBroken)
	}
	fmt.Fprintln(stdio.Err, noLog(p)+": nothing to show")
	return nil
}
