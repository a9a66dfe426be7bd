package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// hostPrefix starts every line about r: "[host <run id>] " when n hosts
// answered or r's is not answering (it is named whatever the count),
// nothing when one did.
func hostPrefix(r notify.Result, n int) string {
	if _, silent := errors.AsType[*notify.NotAnsweringError](r.Err); n <= 1 && !silent {
		return ""
	}
	return fmt.Sprintf("[host %s] ", printable(ShortRun(r.Response.Run, r.Socket)))
}

// PerHost writes, for every result in turn, the lines line makes of it,
// each line prefixed with hostPrefix: to out when line says the result is
// ok, else to errw (a command's results go to stdout, its diagnostics to
// stderr; the build hook passes stderr for both). It returns how many
// results line said failed. Lines are written as they are; line makes them
// printable.
func PerHost(out, errw io.Writer, results []notify.Result, line func(notify.Result) (lines []string, ok bool)) (failed int) {
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

// SignalOutcome reads one host's answer to a build signal: what record
// --json reports of it, and the lines record prints (coloured by p): the
// outcome, then for a server left running every way it differs from the
// build, and the host's policy lines (notify.Response.Policy).
func SignalOutcome(p Painter, r notify.Result) (HostOutcome, []string) {
	o, lines := outcomeLines(p, r)
	for _, l := range r.Response.Policy {
		lines = append(lines, p.Warn("policy: "+printable(l)))
	}
	return o, lines
}

// outcomeLines is SignalOutcome without the policy lines.
func outcomeLines(p Painter, r notify.Result) (HostOutcome, []string) {
	o := HostOutcome{Socket: r.Socket, Run: r.Response.Run, Label: r.Response.Label, Result: localapi.OutcomeOf(r.Response, r.Err), Changed: r.Response.Changed}
	resp := r.Response
	if r.Err != nil {
		o.Error = r.Err.Error()
		if _, ok := errors.AsType[*notify.VersionError](r.Err); ok {
			return o, []string{p.Bad("host speaks another protocol version: " + printableText(o.Error))}
		}
		if na, ok := errors.AsType[*notify.NotAnsweringError](r.Err); ok {
			return o, []string{p.Bad(NotAnswering(na) + ": running server state unknown; a host sees the new manifest by itself")}
		}
		if re, ok := errors.AsType[*notify.RemoteError](r.Err); ok && re.Code == notify.CodeBusy {
			return o, []string{p.Bad("host busy: its control socket serves its most connections at once (something holds them open); the build signal did not reach it: " +
				"running server state unknown; the host sees the new manifest by itself within seconds, or run " + selfcmd.Name() + " record again")}
		}
		return o, HostError(p, r, "running server state unknown")
	}
	switch o.Result {
	case localapi.OutcomeRestarted:
		o.OldEpoch, o.NewEpoch, o.OldPID, o.NewPID = resp.OldEpoch, resp.NewEpoch, resp.OldPID, resp.NewPID
		o.GrantsRevoked = resp.GrantsRevoked
		lines := []string{p.Ok(StatusLine(resp))}
		for _, d := range resp.Drift {
			lines = append(lines, p.Bad(printable(d)))
		}
		return o, lines
	case localapi.OutcomeClosed:
		o.OldEpoch, o.OldPID = resp.OldEpoch, resp.OldPID
		return o, []string{p.Warn(fmt.Sprintf("server stopped: epoch %s ended, pid %d; connection closed, the client must reconnect (restart mode close)",
			printable(resp.OldEpoch), resp.OldPID))}
	case localapi.OutcomeUnchanged, localapi.OutcomeHeld:
		o.NewEpoch, o.NewPID, o.GrantsRevoked = resp.Epoch, resp.PID, resp.GrantsRevoked
		line := fmt.Sprintf("running server unchanged: pid=%d epoch=%s", resp.PID, printable(resp.Epoch))
		if o.Result == localapi.OutcomeHeld {
			line += " (restart held: run '" + selfcmd.Name() + " restart')"
		}
		line += raisedNote(resp.GrantsRevoked)
		lines := []string{p.Warn(line)}
		for _, d := range resp.Drift {
			lines = append(lines, p.Bad(printable(d)))
		}
		return o, lines
	}
	o.Error = fmt.Sprintf("unexpected answer %q", resp.Type)
	return o, []string{p.Bad("host gave an unexpected answer " + strconv.Quote(resp.Type))}
}

// HostError is the lines for a host's error answer r to a build signal or
// restart. A start that failed (restart_failed) is the host's own account
// (whether a server runs, what the host does next) and the last lines of
// the failed server's stderr, which otherwise reach only the MCP client's
// log; any other error is "host error CODE: TEXT: unknown", unknown saying
// what is not known then.
func HostError(p Painter, r notify.Result, unknown string) []string {
	re, ok := errors.AsType[*notify.RemoteError](r.Err)
	if !ok {
		return []string{p.Bad("host error: " + printableText(r.Err.Error()) + ": " + unknown)}
	}
	if re.Code != localapi.CodeRestartFailed {
		return []string{p.Bad("host error " + printable(re.Code) + ": " + printableText(re.Message) + ": " + unknown)}
	}
	lines := []string{p.Bad("restart failed: " + printableText(re.Message))}
	if len(r.Response.Stderr) > 0 {
		lines = append(lines, "the server's stderr ended with:")
		for _, l := range r.Response.Stderr {
			lines = append(lines, "  "+printable(l))
		}
	}
	return lines
}

// ShortRun names a host in a line: its run id, else its socket's name,
// else (a Broadcast result without a socket) the socket directory.
func ShortRun(run, socket string) string {
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
		return "; 1 grant revoked (approve again: " + selfcmd.Name() + " approve)"
	}
	return fmt.Sprintf("; %d grants revoked (approve again: "+selfcmd.Name()+" approve)", n)
}

// raisedNote tells how many grants of the running epoch a stricter
// mcpepoch.toml revoked (policy_raised), if any: with no epoch change, the
// only way a build signal revokes grants.
func raisedNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 grant revoked: " + config.FileName + " raised the approval policy (approve again: " + selfcmd.Name() + " approve)"
	}
	return fmt.Sprintf("; %d grants revoked: %s raised the approval policy (approve again: "+selfcmd.Name()+" approve)", n, config.FileName)
}

// StatusLine is the status line for a host's "restarted" answer. A host
// whose server was down (it exited, or could not start) reports no old
// epoch: the line says the server started, not that one was replaced.
func StatusLine(r notify.Response) string {
	if r.OldEpoch == "" {
		return fmt.Sprintf("server started: epoch %s, pid %d (none was running)%s", printable(r.NewEpoch), r.NewPID, revokedNote(r.GrantsRevoked))
	}
	return fmt.Sprintf("server restarted: epoch %s → %s, pid %d → %d%s",
		printable(r.OldEpoch), printable(r.NewEpoch), r.OldPID, r.NewPID, revokedNote(r.GrantsRevoked))
}

// HostErrorLine is the line for a Broadcast result with an error: a host
// that failed to answer, or (no socket) the project's socket directory.
func HostErrorLine(root string, r notify.Result) string {
	if r.Socket == "" {
		dir, err := notify.Dir(root)
		if err != nil {
			dir = "of " + root
		}
		return fmt.Sprintf("socket directory %s: error: %s", printable(dir), printableText(r.Err.Error()))
	}
	who := printable(ShortRun(r.Response.Run, r.Socket))
	if na, ok := errors.AsType[*notify.NotAnsweringError](r.Err); ok {
		return fmt.Sprintf("host %s: %s", who, NotAnswering(na))
	}
	return fmt.Sprintf("host %s: error: %s", who, printableText(r.Err.Error()))
}

// NotAnswering says, without the host's name, that a host accepted a
// connection and sent nothing in time: "not answering: nothing within 2s
// of the build signal (…)", or that it acknowledged the request and then
// went silent: "silent: acknowledged the build signal, then nothing for
// 5s (…)". Not waited for: the command went on.
func NotAnswering(na *notify.NotAnsweringError) string {
	what := "the " + printable(na.Type) + " request"
	switch na.Type {
	case localapi.TypeTrees, localapi.TypeBuildComplete, localapi.TypeBuildFailed:
		what = "the build signal"
	}
	if na.Acked && na.Progress {
		return fmt.Sprintf("silent: acknowledged %s, then nothing for %v, though a host that works says so every %v (a wedged host), not waited for", what, na.Wait, notify.ProgressInterval)
	}
	if na.Acked {
		return fmt.Sprintf("silent: acknowledged %s, then nothing for %v and no progress (a host from before progress lines may still be working on it; or a process that is no host holding a socket in its directory), not waited for", what, na.Wait)
	}
	return fmt.Sprintf("not answering: nothing within %v of %s (a stopped host, or a process that is no host holding a socket in its directory), not waited for", na.Wait, what)
}
