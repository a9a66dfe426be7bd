// Package credwire is the protocol of the host's credentials broker: the
// per-epoch unix socket through which a server that mcpepoch host launched
// asks for the secret of a credential scope during a call a person
// approved. The broker is in package credbroker; clients are in package
// credentials (Go) and npm's mcpepoch/credentials (Node).
//
// The host puts the socket's absolute path in the server's environment
// (EnvSocket), one socket per execution epoch, and gives each tools/call it
// forwards a random token of that call, in the request's params._meta
// under MetaKey:
//
//	{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{…},"_meta":{"dev.mcpepoch/call":"…"}}}
//
// A client connects, writes one Request as one JSON line, carrying the
// token of the call it asks for, and reads one Answer line back; the host
// then closes the connection.
//
//	→ {"v":2,"scope":"NAME","call":"…"}
//	← {"v":2,"secret":"…"}
//	← {"v":2,"error":{"code":"scope_not_used","message":"…"}}
//
// The host answers with the secret only when all of these hold, checked in
// this order: the peer is the epoch's server process or one of its
// descendants (peer credentials from the kernel), the token is that of a
// tools/call of this epoch still in flight, the scope is declared for the
// broker, that call's tool uses the scope under a grant that names it, the
// grant is still live, a per-call approval was not used already, and the
// source could be read. Each refusal's code names the condition that
// failed (the Code constants), and the audit names the call the token is
// for. Version 1 sent a token of the epoch in the environment instead, so
// that any code of the server could ask during any call; the host refuses
// it (CodeUnsupportedVersion).
package credwire

import "fmt"

// Version is the protocol version: the "v" of every line.
const Version = 2

// EnvSocket is the variable the host sets in the server's environment: the
// broker socket's absolute path.
const EnvSocket = "MCPEPOCH_CREDENTIALS_SOCKET"

// MetaKey is the member of a tools/call request's params._meta that holds
// the call's token (a namespaced key, as MCP asks of _meta keys). The host
// sets it on every tools/call it forwards to a server whose project
// declares a credential scope, replacing whatever the client put there.
const MetaKey = "dev.mcpepoch/call"

// MaxLine is the longest request line the broker reads, newline included,
// in bytes; a longer one is refused with CodeBadRequest. An answer line is
// at most MaxAnswer bytes.
const (
	MaxLine   = 4 << 10
	MaxAnswer = 1 << 20
)

// Request asks for the secret of Scope for the call whose token is Call.
type Request struct {
	V     int    `json:"v"`
	Scope string `json:"scope"`
	Call  string `json:"call"`
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
	CodeBadRequest         = "bad_request"         // not one JSON request line within MaxLine, or no scope or call
	CodeUnsupportedVersion = "unsupported_version" // v is not Version
	CodeBusy               = "busy"                // the broker serves its most connections at once
	CodeWrongProcess       = "wrong_process"       // the peer is not the epoch's server or its descendant
	CodeNotInCall          = "not_in_call"         // the call token names no tools/call of this epoch in flight (it ended, its epoch was replaced, or it never was one)
	CodeUnknownScope       = "unknown_scope"       // mcpepoch.toml declares no such [credentials.NAME]
	CodeNotBroker          = "not_broker"          // the scope is delivered otherwise (deliver = "env")
	CodeScopeNotUsed       = "scope_not_used"      // the call's tool does not use the scope, or its grant does not name it
	CodeGrantRevoked       = "grant_revoked"       // the call's grant was revoked while it ran
	CodeGrantExpired       = "grant_expired"       // the call's grant expired while it ran
	CodePerCallUsed        = "per_call_used"       // the call's per-call approval already gave this scope out once
	CodeSourceFailed       = "source_failed"       // the secret could not be read from its source
	CodeUnavailable        = "unavailable"         // the epoch is ending, or the audit log cannot be written
)
