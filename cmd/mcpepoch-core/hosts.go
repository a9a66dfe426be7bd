package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// askHosts sends req to every live host of the project at root
// (notify.Broadcast) and returns their results, giving them timeout in all.
func askHosts(ctx context.Context, root string, timeout time.Duration, req notify.Request) []notify.Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return notify.Broadcast(ctx, root, req)
}

// hostPrefix starts every line about r: "[host <run id>] " when n hosts
// answered, nothing when one did.
func hostPrefix(r notify.Result, n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("[host %s] ", printable(shortRun(r.Response.Run, r.Socket)))
}

// perHost writes, for every result in turn, the lines line makes of it,
// each line prefixed with hostPrefix: to out when line says the result is
// ok, else to errw (a command's results go to stdout, its diagnostics to
// stderr; the build hook passes stderr for both). It returns how many
// results line said failed. Lines are written as they are; line makes them
// printable.
func perHost(out, errw io.Writer, results []notify.Result, line func(notify.Result) (lines []string, ok bool)) (failed int) {
	for _, r := range results {
		lines, ok := line(r)
		w := out
		if !ok {
			failed++
			w = errw
		}
		who := hostPrefix(r, len(results))
		for _, l := range lines {
			fmt.Fprintf(w, "%s%s\n", who, l)
		}
	}
	return failed
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

// signalOutcome reads one host's answer to a build signal: what record
// --json reports of it, and the lines record prints (coloured by p): the
// outcome, then for a server left running every way it differs from the
// build, and the host's policy lines (notify.Response.Policy).
func signalOutcome(p painter, r notify.Result) (hostOutcome, []string) {
	o, lines := outcomeLines(p, r)
	for _, l := range r.Response.Policy {
		lines = append(lines, p.warn("policy: "+printable(l)))
	}
	return o, lines
}

// outcomeLines is signalOutcome without the policy lines.
func outcomeLines(p painter, r notify.Result) (hostOutcome, []string) {
	o := hostOutcome{Socket: r.Socket, Run: r.Response.Run, Label: r.Response.Label, Result: localapi.OutcomeOf(r.Response, r.Err), Changed: r.Response.Changed}
	resp := r.Response
	if r.Err != nil {
		o.Error = r.Err.Error()
		if _, ok := errors.AsType[*notify.VersionError](r.Err); ok {
			return o, []string{p.bad("host speaks another protocol version: " + printableText(o.Error))}
		}
		if re, ok := errors.AsType[*notify.RemoteError](r.Err); ok && re.Code == notify.CodeBusy {
			return o, []string{p.bad("host busy: its control socket serves its most connections at once (something holds them open); the build signal did not reach it: " +
				"running server state unknown; the host sees the new manifest by itself within seconds, or run mcpepoch record again")}
		}
		return o, []string{p.bad("host error: " + printableText(o.Error) + ": running server state unknown")}
	}
	switch o.Result {
	case localapi.OutcomeRestarted:
		o.OldEpoch, o.NewEpoch, o.OldPID, o.NewPID = resp.OldEpoch, resp.NewEpoch, resp.OldPID, resp.NewPID
		o.GrantsRevoked = resp.GrantsRevoked
		return o, []string{p.ok(statusLine(resp))}
	case localapi.OutcomeClosed:
		o.OldEpoch, o.OldPID = resp.OldEpoch, resp.OldPID
		return o, []string{p.warn(fmt.Sprintf("server stopped: epoch %s ended, pid %d; connection closed, the client must reconnect (restart mode close)",
			printable(resp.OldEpoch), resp.OldPID))}
	case localapi.OutcomeUnchanged, localapi.OutcomeHeld:
		o.NewEpoch, o.NewPID = resp.Epoch, resp.PID
		line := fmt.Sprintf("running server unchanged: pid=%d epoch=%s", resp.PID, printable(resp.Epoch))
		if o.Result == localapi.OutcomeHeld {
			line += " (restart held: run 'mcpepoch restart')"
		}
		lines := []string{p.warn(line)}
		for _, d := range resp.Drift {
			lines = append(lines, p.bad(printable(d)))
		}
		return o, lines
	}
	o.Error = fmt.Sprintf("unexpected answer %q", resp.Type)
	return o, []string{p.bad("host gave an unexpected answer " + strconv.Quote(resp.Type))}
}
