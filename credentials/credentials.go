// Package credentials asks the mcpepoch host for a secret, from inside an
// MCP server that `mcpepoch host` launched.
//
// The host hands a secret only to a call a person approved, on the epoch
// they approved: call Get while handling the tools/call that needs it, and
// do not keep the value past that call.
//
//	func adjust(ctx context.Context, req *mcp.CallToolRequest, in adjustIn) (*mcp.CallToolResult, any, error) {
//		token, err := credentials.Get(ctx, "inventory-api-staging")
//		if err != nil {
//			return nil, nil, err // names the scope and the host's reason, never a value
//		}
//		// use token for this call only
//	}
//
// # Protocol
//
// The host puts two variables in the server's environment, one pair per
// execution epoch: MCPEPOCH_CREDENTIALS_SOCKET, the path of a unix stream
// socket, and MCPEPOCH_CREDENTIALS_TOKEN, a random token of that epoch.
// Get connects, writes one JSON line and reads one JSON line back:
//
//	→ {"v":1,"scope":"NAME","token":"…"}
//	← {"v":1,"secret":"…"}
//	← {"v":1,"error":{"code":"…","message":"…"}}
//
// The host answers with the secret only when the peer is the epoch's server
// process or one of its descendants, the token is this epoch's, and a
// granted tools/call of this epoch whose tool uses the scope is in flight.
// Otherwise it answers with an error whose code names the condition that
// failed; Get returns it as an *Error.
//
// The package has no dependencies beyond the standard library and keeps
// nothing: every Get is one connection, and the value lives only in what
// Get returns.
package credentials

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Names of the environment variables the host sets in the server's
// environment.
const (
	EnvSocket = "MCPEPOCH_CREDENTIALS_SOCKET"
	EnvToken  = "MCPEPOCH_CREDENTIALS_TOKEN"
)

// Version is the protocol version Get speaks: the "v" of every line.
const Version = 1

// ErrNotUnderHost is what Get's error is (errors.Is) when the process was not launched
// by mcpepoch host with credential delivery: MCPEPOCH_CREDENTIALS_SOCKET or
// MCPEPOCH_CREDENTIALS_TOKEN is unset. Test for it with errors.Is.
var ErrNotUnderHost = errors.New("not running under mcpepoch host: " + EnvSocket + " and " + EnvToken + " are not set (run the server with `mcpepoch host -- CMD…`, and declare the scope under [credentials.NAME] in mcpepoch.toml)")

// CodeNotUnderHost is the Code of the *Error Get returns when the process
// was not launched by mcpepoch host with credential delivery; that error
// is ErrNotUnderHost under errors.Is. The Node module's NotUnderHostError
// has the same code and message.
const CodeNotUnderHost = "not_under_host"

// Error is the host's refusal of a request. Code is the host's code, as
// sent, naming which condition failed; Message is the host's explanation.
// Neither carries a secret. The codes are the Code constants of package
// credwire, among them wrong_process (the caller is not the epoch's server
// or its descendant), stale_token (a superseded epoch's token), not_in_call
// (no tools/call of the epoch is in flight), scope_not_used (no granted
// call in flight uses the scope), grant_revoked, grant_expired,
// per_call_used, not_broker (the scope has deliver = "env") and
// source_failed (the host could not read the secret's source).
type Error struct {
	Scope   string // the scope asked for
	Code    string // the host's error code
	Message string // the host's message
}

// Is reports whether e is ErrNotUnderHost: Code is CodeNotUnderHost.
func (e *Error) Is(target error) bool {
	return target == ErrNotUnderHost && e.Code == CodeNotUnderHost
}

// Error returns "credential NAME: CODE: MESSAGE".
func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("credential %s: %s", e.Scope, e.Code)
	}
	return fmt.Sprintf("credential %s: %s: %s", e.Scope, e.Code, e.Message)
}

// maxAnswer bounds the answer line Get reads, in bytes.
const maxAnswer = 1 << 20

// defaultTimeout bounds a request when ctx has no deadline. The host
// answers at once or refuses; it never holds a request.
const defaultTimeout = 30 * time.Second

type request struct {
	V     int    `json:"v"`
	Scope string `json:"scope"`
	Token string `json:"token"`
}

type answer struct {
	V      int     `json:"v"`
	Secret *string `json:"secret"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Get returns the secret of the credential scope named scope (a
// [credentials.NAME] table of the project's mcpepoch.toml) from the host
// that launched this process.
//
// Errors: an *Error of code CodeNotUnderHost, which is ErrNotUnderHost
// under errors.Is, when the environment lacks the socket or the token; *Error when the host refused, with its code; otherwise an
// error naming the socket when it cannot be reached or its answer is not
// one protocol line. ctx bounds the whole exchange; without a deadline, 30
// seconds do.
func Get(ctx context.Context, scope string) (string, error) {
	sock, token := os.Getenv(EnvSocket), os.Getenv(EnvToken)
	if sock == "" || token == "" {
		return "", &Error{Scope: scope, Code: CodeNotUnderHost, Message: ErrNotUnderHost.Error()}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return "", fmt.Errorf("credential %s: host broker %s: %w", scope, sock, err)
	}
	defer conn.Close()
	// Once ctx is done, a past deadline ends the read or write in progress.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	a, err := exchange(conn, request{V: Version, Scope: scope, Token: token})
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("credential %s: host broker %s: %w", scope, sock, err)
	}
	switch {
	case a.V != Version:
		return "", fmt.Errorf("credential %s: host broker %s: answer has protocol version %d, want %d", scope, sock, a.V, Version)
	case a.Error != nil:
		return "", &Error{Scope: scope, Code: a.Error.Code, Message: a.Error.Message}
	case a.Secret == nil:
		return "", fmt.Errorf("credential %s: host broker %s: answer has neither secret nor error", scope, sock)
	}
	return *a.Secret, nil
}

// exchange writes req as one line and reads one answer line.
func exchange(conn net.Conn, req request) (*answer, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(conn, 4096)
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxAnswer {
			return nil, fmt.Errorf("answer longer than %d bytes", maxAnswer)
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("connection closed before a complete answer line")
		}
		return nil, err
	}
	var a answer
	if err := json.Unmarshal(buf, &a); err != nil {
		// The line may hold a secret: never quote it.
		return nil, errors.New("answer is not a JSON protocol line")
	}
	return &a, nil
}
