package notify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// MaxConns is how many connections a Listener serves at once. A connection
// over it is answered with one error response of code CodeBusy and closed
// (unless its first request is of a type Reserve names: then answered);
// while MaxConns such refusals are still being written, further ones are
// closed without a response. With a request line limited to MaxLine and a
// 64 KiB read buffer, all connections together hold at most about
// MaxConns × (MaxLine + 64 KiB) = 34 MiB of input. A peer that connects
// and sends nothing holds its slot for lineTimeout only, so shutting out
// the build hook and the person's commands takes MaxConns connections
// renewed every few seconds.
const MaxConns = 32

// Timeouts a Listener applies to each connection.
const (
	// idleTimeout is how long a connection may wait, after a response,
	// before sending its next request line.
	idleTimeout = time.Minute
	// lineTimeout is how long the first request line may take from the
	// accept, and any later one from its first byte: a peer that sends
	// nothing, or half a line, and stops holds its connection, and what it
	// buffered, no longer than this.
	lineTimeout = 3 * time.Second
	// writeTimeout bounds the writing of one response line.
	writeTimeout = 10 * time.Second
	// drainTimeout bounds the reading of unread input before a connection
	// the host refuses is closed (closing with unread input would reset it
	// before the client reads the error response).
	drainTimeout = time.Second
)

// Listener is one host's socket. Create it with Listen; it is safe for
// concurrent use.
type Listener struct {
	ul   *net.UnixListener
	path string
	name string
	uid  int

	closeOnce sync.Once
	closeErr  error

	// reserved are the request types a connection over MaxConns is still
	// served for (Reserve); set before Serve, read-only after.
	reserved map[string]bool
}

// Reserve has l serve requests of the given types even when MaxConns
// connections are taken: a connection over MaxConns has its first request
// line read (within a second) and, when its type is reserved, answered
// (that one request, then closed); any other gets CodeBusy. A program of
// the user that holds every slot with valid requests then still cannot
// keep a person's revoke or status out. It cannot hold the overflow lane
// with valid requests either: each is answered at once and closed; but
// MaxConns more connections each dribbling half a line, renewed every
// second, fill it, so the lane is best effort: what must get through
// needs a way besides the socket (the host's revoke request file,
// host/revokefile.go). Call it before Serve.
func (l *Listener) Reserve(types ...string) {
	l.reserved = map[string]bool{}
	for _, t := range types {
		l.reserved[t] = true
	}
}

// Listen creates the project's socket directory if needed (see Dir for
// where and with which modes) and listens on <dir>/<name>.sock, where name
// is the host's run id, a canonical 26-character ULID. The socket is mode
// 0600.
//
// A socket file already at that path is removed only when dialing it is
// refused (its host is gone). When a host answers on it, Listen returns an
// error wrapping ErrInUse and naming the path; any other file there, or any
// other dial error, is reported and left alone.
func Listen(projectRoot, name string) (*Listener, error) {
	if !IsULID(name) {
		return nil, fmt.Errorf("socket name %q is not a canonical ULID", name)
	}
	dir, err := MakeDir(projectRoot)
	if err != nil {
		return nil, err
	}
	return listenPath(filepath.Join(dir, name+SocketSuffix), name)
}

// listenPath is Listen once the directory exists.
func listenPath(path, name string) (*Listener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unix"}
	ul, err := net.ListenUnix("unix", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if err := removeStale(path); err != nil {
			return nil, err
		}
		ul, err = net.ListenUnix("unix", addr)
	}
	if err != nil {
		return nil, err
	}
	ul.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return &Listener{ul: ul, path: path, name: name, uid: os.Geteuid()}, nil
}

// removeStale removes the socket file at path if nothing answers on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("listen %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("listen %s: file exists and is not a socket (mode %v)", path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("listen %s: %w", path, ErrInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("listen %s: cannot tell whether the existing socket is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listen %s: removing stale socket: %w", path, err)
	}
	return nil
}

// Path returns the socket's absolute path.
func (l *Listener) Path() string { return l.path }

// Close stops listening and removes the socket file. Connections already
// accepted are closed by Serve. Calling Close again returns the first
// result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.ul.Close() })
	return l.closeErr
}

// Serve accepts connections until ctx is done or l is closed, then closes l
// (removing the socket file), closes the open connections, waits for running
// handlers to return, and returns nil. It returns a non-nil error only when
// accepting fails for another reason. Call it once per Listener.
//
// For each connection Serve checks the peer credentials: a peer whose uid
// is not the host's effective uid, or whose credentials cannot be read, gets
// one error response with code CodeForbidden and the connection is closed.
// Otherwise Serve reads request lines and answers each with h, in order,
// until the peer closes, a line exceeds MaxLine (answered with
// CodeBadRequest, then closed), the peer stays silent for a minute, or a
// line it started is not complete within 3 seconds (the first one: within
// 3 seconds of the accept). At most MaxConns
// connections are served at once; one more gets CodeBusy.
func (l *Listener) Serve(ctx context.Context, h Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	context.AfterFunc(ctx, func() { l.Close() })
	var (
		mu       sync.Mutex
		conns    = map[*net.UnixConn]struct{}{}
		wg       sync.WaitGroup
		serving  = make(chan struct{}, MaxConns)
		refusing = make(chan struct{}, MaxConns)
	)
	defer func() {
		cancel()
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := AcceptUnix(ctx, l.ul)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", l.path, err)
		}
		select {
		case serving <- struct{}{}:
		default:
			l.busy(ctx, c, h, refusing, &wg)
			continue
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-serving }()
			l.serveConn(ctx, c, h)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
}

// busy refuses c, a connection over MaxConns, with CodeBusy, unless its
// first request line, read within drainTimeout, is of a reserved type
// (Reserve): then h answers it, and c is closed. The overflow takes a
// slot in refusing for as long as it lasts; with every slot taken, c is
// closed at once.
func (l *Listener) busy(ctx context.Context, c *net.UnixConn, h Handler, refusing chan struct{}, wg *sync.WaitGroup) {
	select {
	case refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-refusing }()
		defer c.Close()
		if len(l.reserved) > 0 && l.serveReserved(ctx, c, h) {
			return
		}
		l.refuse(c, ErrorResponse(CodeBusy, fmt.Sprintf("the host already serves %d connections, the most it serves at once; try again", MaxConns)))
	}()
}

// serveReserved reads the first request line of c, an overflow
// connection, and answers it when its type is reserved; it reports
// whether it answered. A peer that is not the host's user, or whose line
// is late, malformed or of another type, is left to the busy refusal.
func (l *Listener) serveReserved(ctx context.Context, c *net.UnixConn, h Handler) bool {
	peer, err := peerCred(c)
	if err != nil || peer.Checked && peer.UID != l.uid {
		return false
	}
	c.SetReadDeadline(time.Now().Add(drainTimeout))
	line, err := ReadLine(bufio.NewReaderSize(c, 64<<10))
	if err != nil {
		return false
	}
	var req struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(line, &req) != nil || !l.reserved[req.Type] {
		return false
	}
	c.SetReadDeadline(time.Time{})
	ack := func(bool) (stop func()) {
		l.write(c, Response{V: ProtocolVersion, Type: TypeReceived, Run: l.name})
		return func() {}
	}
	l.write(c, l.handle(ctx, peer, line, h, ack))
	return true
}

// serveConn runs the protocol on one accepted connection.
func (l *Listener) serveConn(ctx context.Context, c *net.UnixConn, h Handler) {
	peer, err := peerCred(c)
	if err != nil {
		l.refuse(c, ErrorResponse(CodeForbidden, fmt.Sprintf("cannot read peer credentials: %v", err)))
		return
	}
	if peer.Checked && peer.UID != l.uid {
		l.refuse(c, ErrorResponse(CodeForbidden, fmt.Sprintf("peer uid %d is not the host's uid %d", peer.UID, l.uid)))
		return
	}
	br := bufio.NewReaderSize(c, 64<<10)
	// The first request line must arrive whole within lineTimeout of the
	// accept: a peer that connects and never sends a byte would otherwise
	// hold one of MaxConns slots for idleTimeout, and MaxConns such peers,
	// reconnecting, would shut out every build hook and approval.
	c.SetReadDeadline(time.Now().Add(lineTimeout))
	for first := true; ; first = false {
		if !first {
			c.SetReadDeadline(time.Now().Add(idleTimeout))
			if _, err := br.Peek(1); err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(lineTimeout))
		}
		line, err := ReadLine(br)
		if errors.Is(err, ErrLineTooLong) {
			l.refuse(c, ErrorResponse(CodeBadRequest, "request "+err.Error()))
			return
		}
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		ack := func(progress bool) (stop func()) {
			l.write(c, Response{V: ProtocolVersion, Type: TypeReceived, Run: l.name, Progress: progress})
			if !progress {
				return func() {}
			}
			return l.beat(c)
		}
		if err := l.write(c, l.handle(ctx, peer, line, h, ack)); err != nil {
			return
		}
	}
}

// handle turns one request line into the response to send, acknowledged
// first with ack when the request asks for it.
func (l *Listener) handle(ctx context.Context, peer Peer, line []byte, h Handler, ack func(progress bool) (stop func())) Response {
	resp := dispatch(ctx, peer, line, h, ack)
	resp.V = ProtocolVersion
	if resp.Run == "" {
		resp.Run = l.name
	}
	return resp
}

// dispatch parses and checks line and calls h, after ack (when not nil)
// for a request with Ack set, which also starts the progress lines a
// request with Progress set asks for; they stop (stop, waited for) before
// dispatch returns. An ack that cannot be written is a peer gone: h still
// runs, as it does for a peer gone before the answer.
func dispatch(ctx context.Context, peer Peer, line []byte, h Handler, ack func(progress bool) (stop func())) (resp Response) {
	if len(bytes.TrimSpace(line)) == 0 {
		return ErrorResponse(CodeBadRequest, "empty request line")
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return ErrorResponse(CodeBadRequest, fmt.Sprintf("request line is not a valid request object: %v", err))
	}
	if err := req.Validate(); err != nil {
		if ve, ok := errors.AsType[*VersionError](err); ok {
			return ErrorResponse(CodeUnsupportedVersion, fmt.Sprintf("protocol version %d not supported, this host speaks %d", ve.Theirs, ve.Ours))
		}
		return ErrorResponse(CodeBadRequest, err.Error())
	}
	if req.Ack && ack != nil {
		defer ack(req.Progress)()
	}
	defer func() {
		if r := recover(); r != nil {
			resp = ErrorResponse(CodeInternal, fmt.Sprintf("handler for %q panicked: %v", req.Type, r))
		}
	}()
	resp = h(ctx, peer, req)
	if resp.Type == "" {
		return ErrorResponse(CodeInternal, fmt.Sprintf("handler for %q returned a response without type", req.Type))
	}
	return resp
}

// beat sends a line of type TypeWorking on c every ProgressInterval until
// stop is called, which returns once the last is written: the request
// being answered is still being worked on (Request.Progress). A line that
// cannot be written ends the beat (the peer is gone; the answer's write
// finds that too).
func (l *Listener) beat(c *net.UnixConn) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if l.write(c, Response{V: ProtocolVersion, Type: TypeWorking, Run: l.name}) != nil {
					return
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// write sends resp as one line.
func (l *Listener) write(c *net.UnixConn, resp Response) error {
	b, err := json.Marshal(resp)
	if err == nil && len(b) > MaxLine {
		err = fmt.Errorf("response exceeds %d bytes", MaxLine)
	}
	if err != nil {
		b, _ = json.Marshal(Response{V: ProtocolVersion, Type: TypeError, Run: l.name, Code: CodeInternal,
			Error: fmt.Sprintf("cannot encode %q response: %v", resp.Type, err)})
	}
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	defer c.SetWriteDeadline(time.Time{})
	_, err = c.Write(append(b, '\n'))
	return err
}

// refuse sends resp, then closes c after reading what the peer already
// sent, so that the peer can read resp.
func (l *Listener) refuse(c *net.UnixConn, resp Response) {
	resp.V = ProtocolVersion
	resp.Run = l.name
	if l.write(c, resp) != nil {
		return
	}
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(drainTimeout))
	io.Copy(io.Discard, c)
}

// AcceptUnix waits for the next connection on ul. When the process or the
// system is out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)
// it backs off as net/http does, 5 ms doubling up to 1 s between tries (a
// back-off ends early when ctx is done), and tries again; any other error,
// net.ErrClosed for a closed listener among them, is returned as it is.
// Every local socket server of mcpepoch accepts through it.
func AcceptUnix(ctx context.Context, ul *net.UnixListener) (*net.UnixConn, error) {
	var delay time.Duration
	for {
		c, err := ul.AcceptUnix()
		if err == nil || !(errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)) {
			return c, err
		}
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
	}
}
