package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// runStatus prints what every host of the project runs. It exits 4 when a
// host, or the socket directory, answered with an error, or when a host
// gave up restarting its server (its reason says what brings it back),
// after printing what the others said.
func runStatus(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("status", stdio.Err, "[--json] [--full] [--dir DIR]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	asJSON := fs.Bool("json", false, "print a JSON array with one object per host on stdout")
	full := fs.Bool("full", false, "show digests whole (default: the first 12 hex digits)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	results := askHosts(ctx, root, 10*time.Second, notify.Request{Type: localapi.TypeStatus})
	all, _, failed := payloads[localapi.Status](stdio.Err, root, "status", results)
	var done error
	switch {
	case len(results) == 0:
		fmt.Fprintln(stdio.Err, noHostLine(root, ""))
		done = silentExit(exitNoHost)
	case failed > 0:
		done = silentExit(exitHostError)
	}
	for _, s := range all {
		if s.GaveUp {
			// A server the host stopped restarting is down for good until
			// someone acts: a script checking status must see it.
			done = silentExit(exitHostError)
		}
	}
	if *asJSON {
		if err := writeJSON(stdio.Out, all); err != nil {
			return err
		}
		return done
	}
	// Every string below comes from a host, and some from the server or
	// the project's files: all of it goes through printable.
	sc := screen{p: newPainter(stdio.Out), full: *full}
	for _, s := range all {
		fmt.Fprintf(stdio.Out, "host %s (%s): %s for %s\n", printable(string(s.AgentRun)), printable(s.Label), printable(string(s.State)),
			time.Duration(s.SinceSeconds*float64(time.Second)).Round(time.Second))
		if s.Reason != "" {
			fmt.Fprintf(stdio.Out, "  reason:   %s\n", printable(s.Reason))
		}
		if e := s.Execution; e != nil {
			fmt.Fprintf(stdio.Out, "  epoch:    %s  pid %d  started %s\n", printable(string(e.Epoch)), e.ProcessID, e.StartedAt.Local().Format(time.RFC3339))
			fmt.Fprintf(stdio.Out, "  command:  [%s] in %s\n", printableList(e.LaunchCommand, " "), printable(e.WorkingDirectory))
			fmt.Fprintf(stdio.Out, "  entry:    %s\n", sc.digest(string(e.EntryDigest)))
			if e.LockfileDigest != "" {
				fmt.Fprintf(stdio.Out, "  lockfile: %s\n", sc.digest(string(e.LockfileDigest)))
			}
			fmt.Fprintf(stdio.Out, "  runtime:  %s %s\n", printable(e.Runtime), sc.digest(string(e.RuntimeDigest)))
		}
		if r := s.Running; r != nil {
			fmt.Fprintf(stdio.Out, "  running:  %s %s as %q in %s\n", printable(r.Exe), sc.digest(string(r.ExeDigest)), r.Cmdline, printable(r.Cwd))
		} else if s.Execution != nil {
			fmt.Fprintf(stdio.Out, "  running:  not observed (no /proc on this platform, or no message from the server yet)\n")
		}
		if s.ConfigChanged != "" {
			fmt.Fprintf(stdio.Out, "  config:   %s\n", sc.p.warn(printable(s.ConfigChanged)))
		}
		if s.PolicyFloorMissing != "" {
			fmt.Fprintf(stdio.Out, "  policy:   %s\n", sc.p.warn(printable(s.PolicyFloorMissing)))
		}
		for _, w := range s.PolicyNotApplied {
			fmt.Fprintf(stdio.Out, "  policy:   %s\n", sc.p.warn(printable(fmt.Sprintf("%s = %s in %s weakens the policy floor, not applied (in force: %s); a person must accept it", w.Setting, w.File, config.FileName, w.InForce))))
		}
		if s.AuditUnavailable != "" {
			fmt.Fprintf(stdio.Out, "  audit:    %s\n", sc.p.warn(printable(s.AuditUnavailable)))
		}
		for _, d := range s.Drift {
			fmt.Fprintf(stdio.Out, "  %s\n", printable(d))
		}
		if s.Catalog != "" {
			fmt.Fprintf(stdio.Out, "  catalog:  %s (%s)\n", sc.digest(string(s.Catalog)), count(len(s.Tools), "tool"))
		}
		for _, w := range s.WaitingApproval {
			fmt.Fprintf(stdio.Out, "  waiting:  %s of %s held for an approval for %s (mcpepoch approve)\n", count(w.Calls, "call"), printable(w.Tool),
				time.Duration(w.SinceSeconds*float64(time.Second)).Round(time.Second))
		}
	}
	return done
}
