package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// runRestart asks every host of the project to start its server under a
// new epoch now: what restart mode "manual" waits for.
func runRestart(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("restart", stdio.Err, "[--dir DIR]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for hosts to restart the server")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	results := askHosts(ctx, root, *timeout, notify.Request{Type: localapi.TypeRestart})
	if len(results) == 0 {
		fmt.Fprintln(stdio.Err, noHostLine(root, ": nothing restarted"))
		return silentExit(exitNoHost)
	}
	failed := perHost(stdio.Out, stdio.Err, results, func(r notify.Result) ([]string, bool) {
		switch {
		case r.Err != nil:
			if na, ok := errors.AsType[*notify.NotAnsweringError](r.Err); ok {
				return []string{cli.NotAnswering(na) + ": nothing restarted there"}, false
			}
			return cli.HostError(cli.Painter{}, r, "nothing restarted there"), false
		case localapi.OutcomeOf(r.Response, nil) == localapi.OutcomeRestarted:
			return []string{statusLine(r.Response)}, true
		}
		return []string{fmt.Sprintf("unexpected answer %q", r.Response.Type)}, false
	}) > 0
	if failed {
		return silentExit(exitHostError)
	}
	return nil
}
