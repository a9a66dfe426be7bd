// Package notify is the hook↔host socket protocol: newline-delimited JSON
// over one unix domain socket per host, its client side ([Dial], [Send],
// [Broadcast]) and the host's side ([Listener], with the peer credential
// check).
// What the messages mean (request types, payloads, outcomes, error codes,
// who may send what) is the local API's, in package localapi.
//
// Every host (mcpepoch host) of a project listens on its own socket
// <Dir(root)>/<run id>.sock, where the run id is the host's 26-character ULID.
// The build hook (mcpepoch record) finds the sockets with [Hosts] and signals
// them all with [Broadcast]. The design follows tailscale's local API
// (safesocket and peercred): the socket directory is mode 0700 and owned by
// the user, the socket is mode 0600, and on Linux and macOS every connection
// is additionally checked with the kernel's peer credentials (by notify's
// listener), so only processes of the same effective uid are served.
//
// # Wire format
//
// A connection carries one or more request/response pairs in sequence: the
// client writes one [Request] as a single line of JSON ending in "\n", the
// host answers with one [Response] line, and so on until either side closes.
// A line is at most [MaxLine] bytes, not counting the newline. Every message
// carries "v": [ProtocolVersion]. Example:
//
//	→ {"v":1,"type":"build_complete","build":"01J9Z6Y3N4D5X8QK2M7R3T1V0A","manifest":"/src/app/.mcpepoch/manifest.toml"}
//	← {"v":1,"type":"restarted","run":"01J9Z6W0C2H6F0S8A1B3E5G7K9","oldEpoch":"…","newEpoch":"…","oldPid":4711,"newPid":4790}
//
// A request with "ack":true is first acknowledged with a line of type
// [TypeReceived], sent as soon as the host has read and checked it; the
// answer follows when the work is done:
//
//	→ {"v":1,"type":"build_complete","build":"…","manifest":"…","ack":true}
//	← {"v":1,"type":"received","run":"01J9Z6W0C2H6F0S8A1B3E5G7K9"}
//	← {"v":1,"type":"restarted",…}
//
// A request that also has "progress":true (every client of this package
// sets it with "ack") is told, while the host works, that it does: its
// acknowledgement says "progress":true, and a line of type [TypeWorking]
// follows every [ProgressInterval] until the answer. A client waits past
// the acknowledgement for as long as such lines come, at most
// [SilenceWait] between two (an earlier host sends none and no
// "progress" in its acknowledgement; it ignores the field):
//
//	→ {"v":1,"type":"build_complete",…,"ack":true,"progress":true}
//	← {"v":1,"type":"received","run":"…","progress":true}
//	← {"v":1,"type":"working","run":"…"}
//	← {"v":1,"type":"restarted",…}
//
// A host never crashes on bad input: a line that is not a valid request gets
// a response of type "error" with code [CodeBadRequest] naming what is wrong,
// and the connection goes on (a line over [MaxLine] closes it after the
// error response).
package notify

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oklog/ulid/v2"
)

// ProtocolVersion is the value of "v" in every message this package writes.
// A peer that sends another value gets (or causes) a [*VersionError].
const ProtocolVersion = 1

// MaxLine is the largest request or response line, in bytes, not counting the
// terminating newline (1 MiB).
const MaxLine = 1 << 20

// TypeError is the type of an error response: the request failed, Code
// and Error say why. Clients turn it into a [*RemoteError]. The other
// request and response types are the local API's (package localapi); this
// package carries any non-empty type.
const TypeError = "error"

// TypeReceived is the type of a host's acknowledgement: the line it sends
// at once, before its answer, to a request with Ack set. It carries only
// "v", "type" and "run". Clients read past it (Conn.Do).
const TypeReceived = "received"

// TypeWorking is the type of the line a host sends every
// ProgressInterval, between its acknowledgement and its answer, to a
// request with Ack and Progress set: it is still working on it. It
// carries only "v", "type" and "run". Clients read past it (Conn.Do).
const TypeWorking = "working"

// Error codes carried in Response.Code when Type is [TypeError].
const (
	// CodeForbidden: the peer's uid differs from the host's.
	CodeForbidden = "forbidden"
	// CodeBadRequest: the request line is not valid JSON, lacks a required
	// field, or has a field of the wrong shape. Error names the field.
	CodeBadRequest = "bad_request"
	// CodeUnsupportedVersion: the request's "v" is not the host's
	// ProtocolVersion. Clients turn it into a [*VersionError].
	CodeUnsupportedVersion = "unsupported_version"
	// CodeUnknownType: the host does not serve the request's type.
	CodeUnknownType = "unknown_type"
	// CodeInternal: the host failed while handling a valid request.
	CodeInternal = "internal"
	// CodeBusy: the host already serves MaxConns connections; the
	// connection is closed after this response. Try again later.
	CodeBusy = "busy"
)

// Request is one line from the hook (or another client) to a host.
type Request struct {
	// V is the protocol version; Send and Broadcast set it to
	// ProtocolVersion when it is zero.
	V int `json:"v"`
	// Type is the command, e.g. "build_complete" or "status" (package
	// localapi names them). Required.
	Type string `json:"type"`
	// Build is the ULID of the build ("build_complete" only, required
	// there; package localapi checks it).
	Build string `json:"build,omitempty"`
	// Manifest is the absolute path of the run manifest the build wrote
	// ("build_complete" only, required there).
	Manifest string `json:"manifest,omitempty"`
	// ExitCode is the build's exit status ("build_complete" and
	// "build_failed"); 0 means success.
	ExitCode int `json:"exitCode,omitempty"`
	// Payload carries the arguments of request types added later; it must
	// be valid JSON when set.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Ack asks the host to acknowledge the request (a line of type
	// TypeReceived) as soon as it has read and checked it, before its
	// answer: a request whose answer may take long (a build signal that
	// restarts the server) tells a host that is working from one that does
	// not answer (AnswerWait). A host that predates the field ignores it.
	Ack bool `json:"ack,omitempty"`
	// Progress, with Ack, asks the host for a line of type TypeWorking
	// every ProgressInterval while it works on the request, so that the
	// client can tell a host that works (a restart that recomputes the
	// identity of a large cold tree takes seconds) from one that went
	// silent after its acknowledgement. A host that predates the field
	// ignores it. Conn.Do sets it whenever Ack is set.
	Progress bool `json:"progress,omitempty"`
}

// Validate checks the framing of r: V must be ProtocolVersion (a missing
// "v" is a plain error, another version a [*VersionError]) and Type must be
// set. The fields a request type needs are its route's to check (package
// localapi). The error names the offending field.
func (r Request) Validate() error {
	if r.V == 0 {
		return errors.New(`missing field "v"`)
	}
	if r.V != ProtocolVersion {
		return &VersionError{Ours: ProtocolVersion, Theirs: r.V}
	}
	if r.Type == "" {
		return errors.New(`missing field "type"`)
	}
	return nil
}

// Response is one line from a host back to its client. Fields that do not
// apply to a type are left zero and omitted from the JSON.
type Response struct {
	// V is the protocol version; a host always sets it to ProtocolVersion.
	V int `json:"v"`
	// Type is TypeError or one of the local API's response types (package
	// localapi: an outcome such as "restarted", or the request's own type).
	Type string `json:"type"`
	// Label is the human-readable name of the host's server (from the
	// project configuration), for messages such as "build complete: …".
	Label string `json:"label,omitempty"`
	// Run is the host's run id, the ULID that names its socket. A Listener
	// fills it in when the handler leaves it empty.
	Run string `json:"run,omitempty"`
	// OldEpoch and NewEpoch are the execution epochs (ULIDs) before and
	// after a restart.
	OldEpoch string `json:"oldEpoch,omitempty"`
	NewEpoch string `json:"newEpoch,omitempty"`
	// Epoch is the current execution epoch when nothing was restarted.
	Epoch string `json:"epoch,omitempty"`
	// OldPID and NewPID are the server's process ids before and after a
	// restart; PID is the current one. Zero means unknown.
	OldPID int `json:"oldPid,omitempty"`
	NewPID int `json:"newPid,omitempty"`
	PID    int `json:"pid,omitempty"`
	// GrantsRevoked is how many grants a restart revoked because they were
	// bound to the epoch that ended.
	GrantsRevoked int `json:"grantsRevoked,omitempty"`
	// Changed lists what the host's own recomputed identity changed
	// against the running epoch's (build.Changes: "dist/server.js",
	// "$NODE_OPTIONS", "package-lock.json (gone)"), on a restart, a held
	// restart or a close. The environment part is the host's: the hook runs
	// with another environment than the server.
	Changed []string `json:"changed,omitempty"`
	// Drift lists, when nothing restarted, every way the running server
	// differs from what was built ("running ≠ built: …"); on a restart,
	// the runtime the new epoch runs when it is not the one the build
	// resolved (the client's PATH finding another interpreter).
	Drift []string `json:"drift,omitempty"`
	// Policy lists, one plain line each, what of the project's policy is
	// not as mcpepoch.toml says or cannot be met, on a build or restart
	// answer: a weakening not applied (and how a person accepts it), the
	// policy floor or trust root gone missing, presence counted with no
	// authenticator enrolled.
	Policy []string `json:"policy,omitempty"`
	// Stderr is, on an error answer about a server that failed while it
	// started (code restart_failed), the last lines it wrote to its
	// stderr, oldest first: at most 12, each cut to 240 bytes.
	Stderr []string `json:"stderr,omitempty"`
	// Error is a lowercase, human-readable message (TypeError only).
	Error string `json:"error,omitempty"`
	// Code is a machine-readable error code such as CodeBadRequest
	// (TypeError only).
	Code string `json:"code,omitempty"`
	// Payload carries the results of response types added later.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Progress, on an acknowledgement (TypeReceived), says that lines of
	// type TypeWorking follow until the answer (Request.Progress).
	Progress bool `json:"progress,omitempty"`
}

// ErrorResponse returns a response of type TypeError with the given code and
// message, for handlers to return.
func ErrorResponse(code, message string) Response {
	return Response{V: ProtocolVersion, Type: TypeError, Code: code, Error: message}
}

// RemoteError is what a client returns when the host answered with a
// response of type TypeError (other than CodeUnsupportedVersion).
type RemoteError struct {
	// Code is the response's code, e.g. CodeForbidden or CodeBadRequest.
	Code string
	// Message is the response's error text.
	Message string
}

// Error returns "host error <code>: <message>".
func (e *RemoteError) Error() string {
	return fmt.Sprintf("host error %s: %s", e.Code, e.Message)
}

// VersionError reports that the two sides of a connection speak different
// protocol versions.
type VersionError struct {
	// Ours is the version this side sent or expects.
	Ours int
	// Theirs is the version the peer sent (0 when it sent none).
	Theirs int
}

// Error returns "protocol version mismatch: peer speaks v<Theirs>, this
// side v<Ours>".
func (e *VersionError) Error() string {
	return fmt.Sprintf("protocol version mismatch: peer speaks v%d, this side v%d", e.Theirs, e.Ours)
}

// ErrInUse is returned (wrapped, with the socket path) by [Listen] when a
// live host already listens on the socket.
var ErrInUse = errors.New("socket in use by a live host")

// ErrLineTooLong is returned by ReadLine for a line over MaxLine bytes.
// It is a value of its own type rather than fmt.Errorf's, so that every
// program that links this package (the build hook among them) starts
// without formatting it.
var ErrLineTooLong error = lineTooLong{}

type lineTooLong struct{}

func (lineTooLong) Error() string { return fmt.Sprintf("line exceeds %d bytes", MaxLine) }

// ReadLine returns the next line from r without its newline. A final line
// without newline is returned with a nil error; io.EOF comes only when no
// bytes were left. A line over MaxLine bytes gives ErrLineTooLong.
func ReadLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		n := len(line)
		if err == nil {
			n-- // the newline does not count
		}
		if n > MaxLine {
			return nil, ErrLineTooLong
		}
		switch {
		case err == nil:
			return line[:n], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && n > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// IsULID reports whether s is a ULID in its canonical 26-character,
// upper-case Crockford base32 form.
func IsULID(s string) bool {
	id, err := ulid.ParseStrict(s)
	return err == nil && id.String() == s
}
