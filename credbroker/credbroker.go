// Package credbroker is the host's credentials broker: one unix socket per
// execution epoch through which that epoch's server asks for a credential
// scope's secret (protocol: package credwire).
//
// The broker owns the transport: the socket (mode 0600, in the host's 0700
// socket directory), its bounds, the peer's credentials, one request line
// and one answer line per connection. Whether to answer with a secret is
// the host's decision, made by the Decider it is given: it knows the calls
// in flight and their tokens (credwire.MetaKey); [TokenEqual] compares a
// request's token with one in constant time.
//
// Bounds, as on the host's own socket (package notify): a peer that
// Broker.Admit refuses is answered at the accept and closed, taking no
// slot; at most MaxConns connections at once (one more is answered
// CodeBusy and closed), the
// request line must arrive whole within LineTimeout of the accept and be
// at most credwire.MaxLine bytes, and the answer is written within
// WriteTimeout. No input can make the broker hold memory or a goroutine
// longer than that.
package credbroker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/notify"
)

// MaxConns is how many connections a Broker serves at once.
const MaxConns = 16

// Timeouts of one connection.
const (
	LineTimeout  = 5 * time.Second // from the accept to the end of the request line
	WriteTimeout = 5 * time.Second // for the answer line
)

// Decider answers one well-formed request (V, Scope and Call set) from
// peer. It runs on the connection's goroutine, several at once for
// different connections; ctx is done when Serve returns. It must find the
// call the token names itself (TokenEqual), in the order credwire
// documents.
type Decider func(ctx context.Context, peer notify.Peer, req credwire.Request) credwire.Answer

// Refused is told of every refusal the broker makes itself, before any
// Decider runs (bad_request, unsupported_version, busy): scope is the one
// asked for when the line could be read, else "".
type Refused func(peer notify.Peer, scope, code string)

// Broker is one epoch's socket. Create it with Listen.
type Broker struct {
	ul   *net.UnixListener
	path string

	closeOnce sync.Once
	closeErr  error

	// Admit, when set before Serve, checks each peer at the accept, before
	// its connection takes one of the MaxConns slots or anything is read:
	// a non-empty code refuses it at once (told to Refused), so that
	// processes that may never be answered a secret cannot hold the slots
	// the server's own requests need.
	Admit func(peer notify.Peer) (code, msg string)
}

// Listen creates the socket at path (its directory must exist and be
// private: the host's socket directory) with mode 0600. A stale socket
// file at path (nothing answers on it) is replaced; anything else there
// is an error.
func Listen(path string) (*Broker, error) {
	addr := &net.UnixAddr{Name: path, Net: "unix"}
	ul, err := net.ListenUnix("unix", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if err = removeStale(path); err == nil {
			ul, err = net.ListenUnix("unix", addr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("credentials broker: %w", err)
	}
	ul.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("credentials broker %s: %w", path, err)
	}
	return &Broker{ul: ul, path: path}, nil
}

// NewToken returns a fresh random call token: 32 bytes, hex. It is a
// capability: never log it.
func NewToken() string {
	var raw [32]byte
	rand.Read(raw[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(raw[:])
}

// TokenEqual reports, in constant time for tokens of one length, whether
// a request's token is want.
func TokenEqual(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// removeStale removes the socket at path when dialing it is refused.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket (mode %v)", path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: another broker answers on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: cannot tell whether the existing socket is stale: %w", path, err)
	}
	return os.Remove(path)
}

// SocketSuffix ends the name of every broker socket (layout.CredentialSocket).
const SocketSuffix = ".cred"

// RemoveStale removes the broker sockets in dir that nothing answers on,
// left by a host that was killed, and returns how many. A socket a live
// broker listens on is kept, whether it answers in time or not.
func RemoveStale(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), SocketSuffix) || e.Type() != os.ModeSocket {
			continue
		}
		p := filepath.Join(dir, e.Name())
		c, err := net.DialTimeout("unix", p, 100*time.Millisecond)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

// Path returns the socket's path, what the server gets in
// credwire.EnvSocket.
func (b *Broker) Path() string { return b.path }

// Env returns the variable the server's environment carries.
func (b *Broker) Env() []string {
	return []string{credwire.EnvSocket + "=" + b.path}
}

// Close stops listening and removes the socket file; connections being
// served finish. Calling Close again returns the first result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.ul.Close() })
	return b.closeErr
}

// Serve accepts connections until ctx is done or b is closed, then closes
// b and waits for the connections it serves; it returns nil then, or the
// accept error that stopped it. Each connection gets one answer, from
// decide unless the broker refuses the request itself (told to refused,
// which may be nil).
func (b *Broker) Serve(ctx context.Context, decide Decider, refused Refused) error {
	ctx, cancel := context.WithCancel(ctx)
	context.AfterFunc(ctx, func() { b.Close() })
	if refused == nil {
		refused = func(notify.Peer, string, string) {}
	}
	var wg sync.WaitGroup
	defer func() {
		cancel() // a Decider still reading a source stops
		wg.Wait()
	}()
	slots := make(chan struct{}, MaxConns)
	for {
		c, err := notify.AcceptUnix(ctx, b.ul)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("credentials broker %s: accept: %w", b.path, err)
		}
		if b.admitted(c, refused) {
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			// Over the bound: answered and closed at once (refuseAtAccept).
			peer, _ := notify.PeerOf(c)
			refuseAtAccept(c, refusal(credwire.CodeBusy, fmt.Sprintf("the broker already serves %d connections; try again", MaxConns)))
			refused(peer, "", credwire.CodeBusy)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			defer c.Close()
			b.serveConn(ctx, c, decide, refused)
		}()
	}
}

// admitted refuses c when Admit does not admit its peer, and reports
// whether it did: answered and closed at once (refuseAtAccept).
func (b *Broker) admitted(c *net.UnixConn, refused Refused) (closed bool) {
	if b.Admit == nil {
		return false
	}
	peer, err := notify.PeerOf(c)
	if err != nil {
		peer = notify.Peer{UID: -1}
	}
	code, msg := b.Admit(peer)
	if code == "" {
		return false
	}
	refuseAtAccept(c, refusal(code, msg))
	refused(peer, "", code)
	return true
}

// refuseWriteTimeout bounds the write of a refusal made at the accept.
// The answer fits the empty buffer of a new connection, so the write does
// not block; the bound only keeps the accept loop from waiting on a
// kernel that says otherwise. It is long enough for a broker descheduled
// between setting it and writing (a loaded machine): with 10 ms the
// answer was sometimes never written, and the peer, whose request was
// left unread, read a connection reset instead of why it was refused.
const refuseWriteTimeout = time.Second

// refuseAtAccept writes answer a on the new connection c, from the accept
// loop, and closes it.
func refuseAtAccept(c *net.UnixConn, a credwire.Answer) {
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	writeAnswer(c, a)
	c.Close()
}

// serveConn reads one request from c and writes its answer.
func (b *Broker) serveConn(ctx context.Context, c *net.UnixConn, decide Decider, refused Refused) {
	peer, err := notify.PeerOf(c)
	if err != nil {
		peer = notify.Peer{UID: -1}
	}
	c.SetReadDeadline(time.Now().Add(LineTimeout))
	req, code, msg := readRequest(bufio.NewReaderSize(c, credwire.MaxLine))
	var a credwire.Answer
	if code != "" {
		if msg == "" {
			return // the peer went away or sent nothing in time: nobody to answer
		}
		refused(peer, req.Scope, code)
		a = refusal(code, msg)
	} else {
		a = decide(ctx, peer, req)
	}
	c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	writeAnswer(c, a)
}

// readRequest reads and checks one request line. It returns a code and
// message for a request to refuse; a code with an empty message means
// there is no one to answer (the peer closed or stayed silent).
func readRequest(br *bufio.Reader) (req credwire.Request, code, msg string) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return req, credwire.CodeBadRequest, fmt.Sprintf("request line over %d bytes", credwire.MaxLine)
	case err != nil && len(bytes.TrimSpace(line)) == 0:
		return req, credwire.CodeBadRequest, ""
	case err != nil:
		return req, credwire.CodeBadRequest, "request line not ended by a newline in time"
	}
	// The version first: another version's request may have other
	// members (version 1 sent a token of the epoch).
	var v struct {
		V *int `json:"v"`
	}
	if json.Unmarshal(line, &v) == nil && v.V != nil && *v.V != credwire.Version {
		return credwire.Request{V: *v.V}, credwire.CodeUnsupportedVersion, unsupported(*v.V)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return credwire.Request{}, credwire.CodeBadRequest, "request line is not a request object: " + jsonProblem(err)
	}
	switch {
	case req.V != credwire.Version:
		return req, credwire.CodeUnsupportedVersion, unsupported(req.V)
	case req.Scope == "":
		return req, credwire.CodeBadRequest, "no scope: name the [credentials.NAME] the call needs"
	case req.Call == "":
		return req, credwire.CodeBadRequest, "no call: send the token the host put in the tools/call request's params._meta[\"" + credwire.MetaKey + "\"]"
	}
	return req, "", ""
}

// unsupported is the message refusing a request of protocol version v.
func unsupported(v int) string {
	return fmt.Sprintf("protocol version %d not supported; this host speaks %d, where each request names its call: update the credentials client (Go github.com/mcpepoch/mcpepoch/credentials, npm mcpepoch) and pass it the _meta of the tools/call it handles", v, credwire.Version)
}

// jsonProblem describes a decoding error without quoting the input, which
// may hold a token.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te) && slices.Contains([]string{"v", "scope", "call"}, te.Field):
		return fmt.Sprintf("%s must be a %s", te.Field, te.Type)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return "unknown member (a request has v, scope and call only)"
	}
	return "invalid request"
}

func refusal(code, msg string) credwire.Answer {
	return credwire.Answer{V: credwire.Version, Error: &credwire.Error{Code: code, Message: msg}}
}

// Refusal is an answer refusing with code and msg.
func Refusal(code, msg string) credwire.Answer { return refusal(code, msg) }

// Issue is an answer handing over secret.
func Issue(secret string) credwire.Answer {
	return credwire.Answer{V: credwire.Version, Secret: secret}
}

func writeAnswer(c net.Conn, a credwire.Answer) {
	a.V = credwire.Version
	b, err := json.Marshal(a)
	if err != nil || len(b) >= credwire.MaxAnswer {
		b, _ = json.Marshal(refusal(credwire.CodeSourceFailed, "the secret is too large to send"))
	}
	c.Write(append(b, '\n'))
}
