package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/notify"
)

func runStatus(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("status", stdio.Err, "[--json] [--dir DIR]")
	dirFlag := fs.String("dir", ".", "project root")
	asJSON := fs.Bool("json", false, "print a JSON array with one object per host on stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	root, err := projectRoot(*dirFlag)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	results := notify.Broadcast(ctx, root, notify.Request{Type: notify.TypeStatus})
	all := []host.Status{}
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(stdio.Err, "host %s: error: %v\n", shortRun("", r.Socket), r.Err)
			continue
		}
		var s host.Status
		if err := json.Unmarshal(r.Response.Payload, &s); err != nil {
			fmt.Fprintf(stdio.Err, "host %s: unreadable status: %v\n", shortRun(r.Response.Run, r.Socket), err)
			continue
		}
		all = append(all, s)
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	if len(results) == 0 {
		fmt.Fprintln(stdio.Out, "no host listening for this project")
		return nil
	}
	for _, s := range all {
		fmt.Fprintf(stdio.Out, "host %s (%s): %s for %s\n", s.AgentRun, s.Label, s.State, time.Duration(s.SinceSeconds*float64(time.Second)).Round(time.Second))
		if s.Reason != "" {
			fmt.Fprintf(stdio.Out, "  reason:   %s\n", s.Reason)
		}
		if e := s.Execution; e != nil {
			fmt.Fprintf(stdio.Out, "  epoch:    %s  pid %d  started %s\n", e.Epoch, e.ProcessID, e.StartedAt.Local().Format(time.RFC3339))
			fmt.Fprintf(stdio.Out, "  command:  %v in %s\n", e.LaunchCommand, e.WorkingDirectory)
			fmt.Fprintf(stdio.Out, "  entry:    %s\n", e.EntryDigest)
			if e.LockfileDigest != "" {
				fmt.Fprintf(stdio.Out, "  lockfile: %s\n", e.LockfileDigest)
			}
			fmt.Fprintf(stdio.Out, "  runtime:  %s %s\n", e.Runtime, e.RuntimeDigest)
		}
		if r := s.Running; r != nil {
			fmt.Fprintf(stdio.Out, "  running:  %s %s as %q in %s\n", r.Exe, r.ExeDigest, r.Cmdline, r.Cwd)
		} else if s.Execution != nil {
			fmt.Fprintf(stdio.Out, "  running:  not observed (no /proc on this platform, or no message from the server yet)\n")
		}
		for _, d := range s.Drift {
			fmt.Fprintf(stdio.Out, "  %s\n", d)
		}
		if s.Catalog != "" {
			fmt.Fprintf(stdio.Out, "  catalog:  %s (%d tools)\n", s.Catalog, len(s.Tools))
		}
	}
	return nil
}
