// Package credentials asks the mcpepoch host for a secret, from inside an
// MCP server that `mcpepoch host` launched.
//
// The host hands a secret only to a call a person approved, on the epoch
// they approved: call Get while handling the tools/call that needs it,
// with that request's _meta, and do not keep the value past that call.
// With the go-sdk (github.com/modelcontextprotocol/go-sdk/mcp):
//
//	func order(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, any, error) {
//		token, err := credentials.Get(ctx, "inventory-supplier", req.Params.Meta)
//		if err != nil {
//			return nil, nil, err // names the scope and the host's reason, never a value
//		}
//		// use token for this call only
//	}
//
// The _meta is how the host knows which call asks: it puts a token of
// each tools/call it forwards in the request's params._meta under MetaKey,
// and hands a scope's secret only to the token of a call in flight whose
// grant names the scope. A server reading JSON-RPC itself passes the
// "_meta" object of the request's params; mark3labs/mcp-go passes
// req.Params.Meta.AdditionalFields. Code that runs for the call in another
// process (a helper the handler starts) gets the token from the handler
// (CallToken) and passes it on, say in an argument, to GetForCall.
//
// # Protocol
//
// The host puts the path of a unix stream socket in the server's
// environment, MCPEPOCH_CREDENTIALS_SOCKET, one per execution epoch. Get
// connects, writes one JSON line naming the scope and the call's token,
// and reads one JSON line back:
//
//	→ {"v":2,"scope":"NAME","call":"…"}
//	← {"v":2,"secret":"…"}
//	← {"v":2,"error":{"code":"…","message":"…"}}
//
// The host answers with the secret only when the peer is the epoch's server
// process or one of its descendants, the token is that of a tools/call of
// this epoch in flight, and that call's tool uses the scope under a grant
// that names it. Otherwise it answers with an error whose code names the
// condition that failed; Get returns it as an *Error.
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

// EnvSocket is the environment variable the host sets in the server's
// environment: the broker socket's path.
const EnvSocket = "MCPEPOCH_CREDENTIALS_SOCKET"

// MetaKey is the member of a tools/call request's params._meta under
// which the host puts the call's token.
const MetaKey = "dev.mcpepoch/call"

// Version is the protocol version Get speaks: the "v" of every line.
const Version = 2

// ErrNotUnderHost is what Get's error is (errors.Is) when the process was not launched
// by mcpepoch host with credential delivery: MCPEPOCH_CREDENTIALS_SOCKET is
// unset. Test for it with errors.Is.
var ErrNotUnderHost = errors.New("not running under mcpepoch host: " + EnvSocket + " is not set (run the server with `mcpepoch host -- CMD…`, and declare the scope under [credentials.NAME] in mcpepoch.toml)")

// CodeNotUnderHost is the Code of the *Error Get returns when the process
// was not launched by mcpepoch host with credential delivery; that error
// is ErrNotUnderHost under errors.Is. The Node module's NotUnderHostError
// has the same code and message.
const CodeNotUnderHost = "not_under_host"

// CodeNoCall is the Code of the *Error Get returns, without asking the
// host, when meta holds no call token: the _meta passed is not the one of
// the tools/call being handled (or none was passed). The Node module's
// error has the same code.
const CodeNoCall = "no_call_token"

// Error is the host's refusal of a request. Code is the host's code, as
// sent, naming which condition failed; Message is the host's explanation.
// Neither carries a secret. The codes are the Code constants of package
// credwire, among them wrong_process (the caller is not the epoch's server
// or its descendant), not_in_call (the token names no tools/call of the
// epoch in flight: it ended, or the epoch was replaced), scope_not_used
// (that call's tool does not use the scope, or its grant does not name
// it), grant_revoked, grant_expired,
// per_call_used, not_broker (the scope has deliver = "env") and
// source_failed (the host could not read the secret's source), and this
// package's own CodeNotUnderHost and CodeNoCall.
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
	Call  string `json:"call"`
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
// that launched this process, for the tools/call whose params._meta is
// meta (go-sdk: req.Params.Meta).
//
// Errors: an *Error of code CodeNotUnderHost, which is ErrNotUnderHost
// under errors.Is, when the environment lacks the socket; one of code
// CodeNoCall when meta holds no call token; *Error when the host refused,
// with its code; otherwise an error naming the socket when it cannot be
// reached or its answer is not one protocol line. ctx bounds the whole
// exchange; without a deadline, 30 seconds do.
func Get(ctx context.Context, scope string, meta map[string]any) (string, error) {
	return GetForCall(ctx, scope, CallToken(meta))
}

// CallToken returns the call token the host put in a tools/call request's
// params._meta (meta), or "" when there is none. It is a capability of
// that call, for as long as it runs: pass it only to code that works for
// the call, never log it.
func CallToken(meta map[string]any) string {
	tok, _ := meta[MetaKey].(string)
	return tok
}

// GetForCall is Get for the call whose token (CallToken) is call: for code
// that works for a call outside its handler, a helper process say, given
// the token by the handler.
func GetForCall(ctx context.Context, scope, call string) (string, error) {
	sock := os.Getenv(EnvSocket)
	if sock == "" {
		return "", &Error{Scope: scope, Code: CodeNotUnderHost, Message: ErrNotUnderHost.Error()}
	}
	if call == "" {
		return "", &Error{Scope: scope, Code: CodeNoCall, Message: noCall}
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
	a, err := exchange(conn, request{V: Version, Scope: scope, Call: call})
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

// noCall is the Message of a CodeNoCall error; the Node module's is the
// same.
const noCall = "no call token: pass the _meta of the tools/call being handled (go-sdk: req.Params.Meta), where the host puts it under \"" + MetaKey + "\""

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
