package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// runRestart asks every host of the project to start its server under a
// new epoch now: what restart mode "manual" waits for.
func runRestart(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("restart", stdio.Err, "[--dir DIR]")
	dirFlag := fs.String("dir", ".", "project root")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for hosts to restart the server")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	root, err := projectRoot(*dirFlag)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	results := notify.Broadcast(ctx, root, notify.Request{Type: localapi.TypeRestart})
	if len(results) == 0 {
		fmt.Fprintln(stdio.Err, "no host listening for this project: nothing restarted")
		return silentExit(exitNoHost)
	}
	failed := false
	for _, r := range results {
		var who string
		if len(results) > 1 {
			who = fmt.Sprintf("[host %s] ", printable(shortRun(r.Response.Run, r.Socket)))
		}
		switch {
		case r.Err != nil:
			failed = true
			fmt.Fprintf(stdio.Err, "%shost error: %s\n", who, printableText(r.Err.Error()))
		case r.Response.Type == string(localapi.OutcomeRestarted):
			fmt.Fprintf(stdio.Err, "%s%s\n", who, statusLine(r.Response))
		default:
			failed = true
			fmt.Fprintf(stdio.Err, "%sunexpected answer %q\n", who, r.Response.Type)
		}
	}
	if failed {
		return silentExit(exitHostError)
	}
	return nil
}
