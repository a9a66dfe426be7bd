// Package credwire is the protocol of the host's credentials broker: the
// per-epoch unix socket through which a server that mcpepoch host launched
// asks for the secret of a credential scope during a call a person
// approved. The broker is in package credbroker; clients are in package
// credentials (Go) and npm's mcpepoch/credentials (Node).
//
// The host puts two variables in the server's environment, one pair per
// execution epoch: EnvSocket, the socket's absolute path, and EnvToken, a
// random token of that epoch. A client connects, writes one Request as one
// JSON line and reads one Answer line back; the host then closes the
// connection.
//
//	→ {"v":1,"scope":"NAME","token":"…"}
//	← {"v":1,"secret":"…"}
//	← {"v":1,"error":{"code":"not_in_call","message":"…"}}
//
// The host answers with the secret only when all of these hold, checked in
// this order: the peer is the epoch's server process or one of its
// descendants (peer credentials from the kernel), the token is this
// epoch's, the scope is declared, a granted tools/call of this epoch is in
// flight and its tool uses the scope, the grant is still live, a per-call
// approval was not used already, and the source could be read. Each
// refusal's code names the condition that failed (the Code constants).
package credwire

import "fmt"

// Version is the protocol version: the "v" of every line.
const Version = 1

// Environment variables the host sets in the server's environment.
const (
	EnvSocket = "MCPEPOCH_CREDENTIALS_SOCKET"
	EnvToken  = "MCPEPOCH_CREDENTIALS_TOKEN"
)

// MaxLine is the longest request line the broker reads, newline included,
// in bytes; a longer one is refused with CodeBadRequest. An answer line is
// at most MaxAnswer bytes.
const (
	MaxLine   = 4 << 10
	MaxAnswer = 1 << 20
)

// Request asks for the secret of Scope.
type Request struct {
	V     int    `json:"v"`
	Scope string `json:"scope"`
	Token string `json:"token"`
}

// Answer is the broker's reply: Secret, or Error. Its String and GoString
// never show the secret, so that printing an Answer cannot leak it.
type Answer struct {
	V      int    `json:"v"`
	Secret string `json:"secret,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// String describes a without its secret.
func (a Answer) String() string {
	if a.Error != nil {
		return fmt.Sprintf("refused: %s: %s", a.Error.Code, a.Error.Message)
	}
	return fmt.Sprintf("secret (%d bytes)", len(a.Secret))
}

// GoString is String, for %#v.
func (a Answer) GoString() string { return a.String() }

// Error is a refusal: Code names the failed condition, Message explains it
// to a person. Neither holds a secret.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Refusal codes, in the order the broker checks their conditions.
const (
	CodeBadRequest         = "bad_request"         // not one JSON request line within MaxLine, or no scope or token
	CodeUnsupportedVersion = "unsupported_version" // v is not Version
	CodeBusy               = "busy"                // the broker serves its most connections at once
	CodeWrongProcess       = "wrong_process"       // the peer is not the epoch's server or its descendant
	CodeStaleToken         = "stale_token"         // the token is not this epoch's (a superseded epoch's, or none)
	CodeUnknownScope       = "unknown_scope"       // mcpepoch.toml declares no such [credentials.NAME]
	CodeNotInCall          = "not_in_call"         // no tools/call of this epoch is in flight
	CodeScopeNotUsed       = "scope_not_used"      // calls are in flight, but no granted one's tool uses the scope
	CodeGrantRevoked       = "grant_revoked"       // the call's grant was revoked while it ran
	CodeGrantExpired       = "grant_expired"       // the call's grant expired while it ran
	CodePerCallUsed        = "per_call_used"       // the call's per-call approval already gave this scope out once
	CodeNotBroker          = "not_broker"          // the scope is delivered otherwise (deliver = "env")
	CodeSourceFailed       = "source_failed"       // the secret could not be read from its source
	CodeUnavailable        = "unavailable"         // the epoch is ending, or the audit log cannot be written
)
