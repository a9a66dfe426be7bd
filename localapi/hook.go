// The build hook's part of the local API: the requests mcpepoch record
// sends and the restart outcome a host answers them with.

package localapi

import (
	"github.com/mcpepoch/mcpepoch/notify"
)

// Request types of the build hook: values of notify.Request.Type.
const (
	// TypeBuildComplete tells a host that a build finished: Build, Manifest
	// and ExitCode are set. The host recomputes its server's identity and
	// answers with an [Outcome] as the response type.
	TypeBuildComplete = "build_complete"
	// TypeBuildFailed tells a host that a build failed (ExitCode set): the
	// host restarts nothing and answers [OutcomeUnchanged] with its running
	// epoch.
	TypeBuildFailed = "build_failed"
)

// CodeRestartFailed is the error code of a host's answer to a build signal
// (or to localapi's TypeRestart) when it could not recompute the identity
// or start the server under the new epoch; Error says why, and Stderr
// holds what a server that failed as it started wrote.
const CodeRestartFailed = "restart_failed"

// Outcome is what a build signal or a restart request led to at one host.
// A host answers TypeBuildComplete, TypeBuildFailed and localapi's
// TypeRestart with a response whose Type is the outcome; mcpepoch record
// --json reports it as a host's "result".
type Outcome string

// The five outcomes.
const (
	// OutcomeRestarted: a new server process runs under a new epoch
	// (OldEpoch, NewEpoch, OldPID, NewPID, GrantsRevoked are set; OldEpoch
	// is empty when no server was running).
	OutcomeRestarted Outcome = "restarted"
	// OutcomeUnchanged: the recomputed identity equals the running one, or
	// the build failed; nothing was restarted (Epoch and PID are set, Drift
	// lists any way what runs differs from what was built).
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeHeld: the identity changed but the host, in restart mode
	// manual, holds the restart until mcpepoch restart; Epoch and PID name
	// what still runs.
	OutcomeHeld Outcome = "held"
	// OutcomeClosed: the identity changed and the host, in restart mode
	// close, stopped its server (OldEpoch, OldPID) and is closing the
	// client's connection so that the client reconnects.
	OutcomeClosed Outcome = "closed"
	// OutcomeError: the host answered with an error, gave an answer that is
	// no outcome, or could not be asked; the running server's state is not
	// known. Its value is notify.TypeError.
	OutcomeError Outcome = notify.TypeError
)

// OutcomeOf is the outcome of one exchange with a host: OutcomeError when
// err is set or the response's type is not one of the other four outcomes.
func OutcomeOf(resp notify.Response, err error) Outcome {
	if err != nil {
		return OutcomeError
	}
	switch o := Outcome(resp.Type); o {
	case OutcomeRestarted, OutcomeUnchanged, OutcomeHeld, OutcomeClosed:
		return o
	}
	return OutcomeError
}
