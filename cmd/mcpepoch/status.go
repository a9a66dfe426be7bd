package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
)

// runStatus prints what every host of the project runs. It exits 4 when a
// host, or the socket directory, answered with an error, when a host gave
// up restarting its server (its reason says what brings it back), or when
// a host's server failed the handshake (it never answered initialize
// within host.init_timeout, or frames its messages as LSP does: the
// reason says which; only a new epoch can change that); else 6 while a
// host's server has not answered initialize yet (starting): a script
// waiting for a host to serve retries on 6. It prints what every host
// said first.
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
		switch {
		case s.GaveUp, s.State == localapi.StateStarting && s.Reason != "":
			// A server the host stopped restarting, or one that failed
			// the handshake, serves nothing until someone acts: a script
			// checking status must see it.
			done = silentExit(exitHostError)
		case s.State == localapi.StateStarting && done == nil:
			done = silentExit(exitStarting)
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
		printStatus(stdio.Out, sc, s)
	}
	return done
}

// printStatus writes one host's status s as text.
func printStatus(w io.Writer, sc screen, s localapi.Status) {
	fmt.Fprintf(w, "host %s (%s): %s for %s\n", printable(string(s.AgentRun)), printable(s.Label), printable(string(s.State)),
		time.Duration(s.SinceSeconds*float64(time.Second)).Round(time.Second))
	if s.Reason != "" {
		fmt.Fprintf(w, "  reason:   %s\n", printable(s.Reason))
	}
	for i, l := range s.LastStderr {
		label := "           "
		if i == 0 {
			label = "  stderr:  "
		}
		fmt.Fprintf(w, "%s %s\n", label, printable(l))
	}
	if e := s.Execution; e != nil {
		fmt.Fprintf(w, "  epoch:    %s  pid %d  started %s\n", printable(string(e.Epoch)), e.ProcessID, e.StartedAt.Local().Format(time.RFC3339))
		fmt.Fprintf(w, "  command:  [%s] in %s\n", printableList(e.LaunchCommand, " "), printable(e.WorkingDirectory))
		fmt.Fprintf(w, "  entry:    %s\n", sc.digest(string(e.EntryDigest)))
		if e.LockfileDigest != "" {
			fmt.Fprintf(w, "  lockfile: %s\n", sc.digest(string(e.LockfileDigest)))
		}
		fmt.Fprintf(w, "  runtime:  %s %s\n", printable(e.Runtime), sc.digest(string(e.RuntimeDigest)))
	}
	if r := s.Running; r != nil {
		fmt.Fprintf(w, "  running:  %s %s as %q in %s\n", printable(r.Exe), sc.digest(string(r.ExeDigest)), r.Cmdline, printable(r.Cwd))
	} else if s.Execution != nil {
		fmt.Fprintf(w, "  running:  not observed (no /proc on this platform, or no message from the server yet)\n")
	}
	if s.ConfigChanged != "" {
		fmt.Fprintf(w, "  config:   %s\n", sc.p.warn(printable(s.ConfigChanged)))
	}
	if s.PolicyFloorMissing != "" {
		fmt.Fprintf(w, "  policy:   %s\n", sc.p.warn(printable(s.PolicyFloorMissing)))
	}
	if s.IdentityUnverified != "" {
		fmt.Fprintf(w, "  identity: %s\n", sc.p.warn("unverified: "+printable(s.IdentityUnverified)))
	}
	if s.ClientUnknown != "" {
		fmt.Fprintf(w, "  client:   %s\n", sc.p.warn(printable(s.ClientUnknown)))
	}
	for _, pw := range s.PolicyNotApplied {
		what := "a person must accept it (" + selfcmd.Name() + " policy accept)"
		switch {
		case pw.Accepted && slices.Contains(trust.IdentitySettings, pw.Setting):
			// What the identity covers is read once, when a host starts.
			what = "accepted, in force when the host starts again (reconnect the client)"
		case pw.Accepted:
			what = "accepted, in force from the next epoch (" + selfcmd.Name() + " restart)"
		}
		fmt.Fprintf(w, "  policy:   %s\n", sc.p.warn(printable(fmt.Sprintf("%s = %s in %s weakens the policy floor, not applied (in force: %s); %s", pw.Setting, pw.File, config.FileName, pw.InForce, what))))
	}
	if s.AuditUnavailable != "" {
		fmt.Fprintf(w, "  audit:    %s\n", sc.p.warn(printable(s.AuditUnavailable)))
	}
	for _, d := range s.Drift {
		fmt.Fprintf(w, "  %s\n", printable(d))
	}
	if s.Catalog != "" {
		fmt.Fprintf(w, "  catalog:  %s (%s)\n", sc.digest(string(s.Catalog)), count(len(s.Tools), "tool"))
	}
	for _, h := range s.WaitingApproval {
		fmt.Fprintf(w, "  waiting:  %s of %s held for an approval for %s ("+selfcmd.Name()+" approve)\n", count(h.Calls, "call"), printable(h.Tool),
			time.Duration(h.SinceSeconds*float64(time.Second)).Round(time.Second))
	}
}
