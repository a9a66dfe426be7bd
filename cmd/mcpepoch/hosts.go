package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// askHosts sends req to every live host of the project at root
// (notify.Broadcast) and returns their results, giving them timeout in all.
// Each host is asked to acknowledge req (notify.Request.Ack): one that has
// not within notify.AnswerWait is not waited for (a *NotAnsweringError),
// so a stopped host, or a socket that is no host's, holds the command up
// that long and no longer.
func askHosts(ctx context.Context, root string, timeout time.Duration, req notify.Request) []notify.Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req.Ack = true
	return notify.Broadcast(ctx, root, req)
}

// payloads decodes the Payload of every result as a T. A host that failed
// to answer, or answered with a payload that does not decode, is reported on
// w in one line ("host <run>: error: …", "host <run>: unreadable <what>:
// …") and counted in failed. from[i] is the result vals[i] came from; vals
// is never nil.
func payloads[T any](w io.Writer, root, what string, results []notify.Result) (vals []T, from []notify.Result, failed int) {
	vals = []T{}
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintln(w, hostErrorLine(root, r))
			failed++
			continue
		}
		v, err := localapi.DecodePayload[T](r.Response.Payload)
		if err != nil {
			fmt.Fprintf(w, "host %s: unreadable %s: %v\n", printable(shortRun(r.Response.Run, r.Socket)), what, err)
			failed++
			continue
		}
		vals, from = append(vals, v), append(from, r)
	}
	return vals, from, failed
}
