package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Dial retry: a socket that does not exist yet, or exists with nobody
// accepting, is retried this often for this long (a host that is starting).
const (
	dialRetryInterval = 50 * time.Millisecond
	dialRetryFor      = time.Second
)

// Conn is a client connection to one host. It carries requests one at a
// time and is not safe for concurrent use.
type Conn struct {
	c    net.Conn // a connected unix stream socket
	r    *bufio.Reader
	path string
}

// Dial connects to the host socket at socketPath. While the dial fails with
// ENOENT or ECONNREFUSED (a host that is still starting) it retries every
// 50 ms for up to 1 s, less if ctx ends sooner; other errors return at once.
// The error is the last dial error, which names socketPath.
func Dial(ctx context.Context, socketPath string) (*Conn, error) {
	return dial(ctx, socketPath, dialRetryFor)
}

func dial(ctx context.Context, path string, retryFor time.Duration) (*Conn, error) {
	give := time.Now().Add(retryFor)
	for {
		f, err := net.Dial("unix", path)
		if err == nil {
			return &Conn{c: f, r: bufio.NewReaderSize(f, 64<<10), path: path}, nil
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		if time.Now().Add(dialRetryInterval).After(give) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(dialRetryInterval):
		}
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Peer returns the credentials of the process listening on the socket, as
// the kernel recorded them when it listened (Peer's rules): the one fact
// about a host that no file and no answer on the socket can forge.
func (c *Conn) Peer() (Peer, error) {
	uc, ok := c.c.(*net.UnixConn)
	if !ok {
		return Peer{UID: -1}, fmt.Errorf("%s: not a unix socket", c.path)
	}
	return peerCred(uc)
}

// AnswerWait is how long a client waits for a host's first line to a
// request that asks for an acknowledgement (Request.Ack): a host acks such
// a request as soon as it has read it, before it does any of the work, so a
// host that has sent nothing by then is stopped, wedged, or no host at all
// (a same-user process can bind any socket in the directory). Past it the
// exchange ends with a *NotAnsweringError; once acked, the answer is
// waited for while the host says it works (SilenceWait).
const AnswerWait = 2 * time.Second

// ProgressInterval is how often a host sends a line of type TypeWorking
// while it works on a request that asked for progress (Request.Progress).
const ProgressInterval = time.Second

// SilenceWait is how long a client waits, past a host's acknowledgement,
// for its next line: a TypeWorking line, or the answer. A host that works
// sends one every ProgressInterval; five missed in a row is a host that
// went silent (wedged, or a same-user process that acknowledges and never
// answers). An earlier host, which sends no progress, is given as long:
// what it does past that is not waited for.
const SilenceWait = 5 * ProgressInterval

// NotAnsweringError is a host that accepted the connection but sent no
// line within Wait of a request of type Type, or (Acked) that
// acknowledged it and then sent nothing for Wait; Progress: its
// acknowledgement promised progress lines. errors.Is(err,
// context.DeadlineExceeded) holds for it.
type NotAnsweringError struct {
	Socket   string
	Type     string
	Wait     time.Duration
	Acked    bool
	Progress bool
}

// Error returns "<socket>: not answering: nothing within <wait> of the
// <type> request", or for an acknowledged request "<socket>: silent:
// acknowledged the <type> request, then nothing for <wait>".
func (e *NotAnsweringError) Error() string {
	if e.Acked {
		return fmt.Sprintf("%s: silent: acknowledged the %s request, then nothing for %v", e.Socket, e.Type, e.Wait)
	}
	return fmt.Sprintf("%s: not answering: nothing within %v of the %s request", e.Socket, e.Wait, e.Type)
}

// Unwrap returns context.DeadlineExceeded.
func (e *NotAnsweringError) Unwrap() error { return context.DeadlineExceeded }

// Do sends req (with V set to ProtocolVersion when zero) and reads the
// host's response, within ctx's deadline and until ctx is cancelled. With
// req.Ack set (Do then sets req.Progress too) the host's acknowledgement
// (a line of type TypeReceived) must come within AnswerWait, or the
// response itself must; past the acknowledgement each next line (a
// TypeWorking line, or the response) must come within SilenceWait, and the
// response until ctx ends.
//
// The error is:
//   - a *VersionError when the response's v differs from req.V, or the host
//     answered with code CodeUnsupportedVersion;
//   - a *RemoteError when the host answered with type TypeError;
//   - a *NotAnsweringError when req.Ack is set and AnswerWait passed first,
//     or SilenceWait after the acknowledgement or a TypeWorking line (Acked);
//   - otherwise a transport, encoding or context error naming the socket
//     (errors.Is(err, context.DeadlineExceeded) holds when ctx expired).
//
// With a *VersionError or *RemoteError the decoded response is returned too.
// After any other error c is no longer usable and should be closed.
func (c *Conn) Do(ctx context.Context, req Request) (Response, error) {
	if req.V == 0 {
		req.V = ProtocolVersion
	}
	req.Progress = req.Progress || req.Ack
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s: encoding %q request: %w", c.path, req.Type, err)
	}
	if len(b) > MaxLine {
		return Response{}, fmt.Errorf("%s: %q request exceeds %d bytes", c.path, req.Type, MaxLine)
	}
	line, err := c.exchange(ctx, req, b)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return Response{}, fmt.Errorf("%s: malformed response: %w", c.path, err)
	}
	if resp.V != req.V || (resp.Type == TypeError && resp.Code == CodeUnsupportedVersion) {
		return resp, &VersionError{Ours: req.V, Theirs: resp.V}
	}
	if resp.Type == TypeError {
		return resp, &RemoteError{Code: resp.Code, Message: resp.Error}
	}
	if resp.Type == "" {
		return resp, fmt.Errorf("%s: malformed response: missing field \"type\"", c.path)
	}
	return resp, nil
}

// exchange writes the request line b and returns the response line, past
// the host's acknowledgement and progress lines when req.Ack asked for
// them (Do's deadlines).
func (c *Conn) exchange(ctx context.Context, req Request, b []byte) ([]byte, error) {
	d := &deadlines{f: c.c}
	d.dl, d.hasDL = ctx.Deadline()
	// silent is what a deadline of ours means, while waiting says that
	// one is in force (not ctx's).
	silent := &NotAnsweringError{Socket: c.path, Type: req.Type, Wait: AnswerWait}
	waiting := false
	if req.Ack {
		waiting = d.bound(AnswerWait)
	} else {
		c.c.SetDeadline(d.dl) // zero without a deadline: none
	}
	defer d.watch(ctx)()
	fail := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%s: %w", c.path, cerr)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if waiting {
				return silent
			}
			return fmt.Errorf("%s: %w", c.path, context.DeadlineExceeded)
		}
		return err
	}

	_, werr := c.c.Write(append(b, '\n'))
	line, rerr := ReadLine(c.r)
	for req.Ack && rerr == nil {
		typ, progress := lineType(line)
		switch {
		case typ == TypeReceived && !silent.Acked:
			silent = &NotAnsweringError{Socket: c.path, Type: req.Type, Wait: SilenceWait, Acked: true, Progress: progress}
		case typ == TypeWorking && silent.Acked:
		default:
			return line, nil
		}
		waiting = d.bound(SilenceWait)
		line, rerr = ReadLine(c.r)
	}
	if rerr != nil {
		// A host that refuses a peer answers and closes without reading,
		// so the write may fail while an answer is waiting: prefer it.
		if werr != nil {
			return nil, fail(werr)
		}
		if errors.Is(rerr, ErrLineTooLong) {
			return nil, fmt.Errorf("%s: response %w", c.path, rerr)
		}
		return nil, fail(fmt.Errorf("%s: reading response: %w", c.path, rerr))
	}
	return line, nil
}

// deadlines sets the deadline of one exchange on a connection: a wait of
// Do's own (AnswerWait, SilenceWait) or ctx's deadline dl, whichever comes
// first, and a deadline in the past once ctx ends.
type deadlines struct {
	f     net.Conn
	dl    time.Time
	hasDL bool
	mu    sync.Mutex // orders the deadlines set by bound and when ctx ends
	ended bool
}

// bound sets the deadline wait from now, or ctx's when that comes first,
// and reports whether wait's is the one in force.
func (d *deadlines) bound(wait time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return false
	}
	if d.hasDL && time.Until(d.dl) <= wait {
		d.f.SetDeadline(d.dl)
		return false
	}
	d.f.SetDeadline(time.Now().Add(wait))
	return true
}

// watch ends the exchange when ctx ends, by a deadline in the past, and
// returns the func that stops watching and clears the deadline.
func (d *deadlines) watch(ctx context.Context) func() {
	expired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.ended = true
		d.f.SetDeadline(time.Unix(1, 0))
		close(expired)
	})
	return func() {
		if !stop() {
			<-expired
		}
		d.f.SetDeadline(time.Time{})
	}
}

// lineType returns the type of a host's line, and its progress field (an
// acknowledgement's promise of TypeWorking lines).
func lineType(line []byte) (typ string, progress bool) {
	var r struct {
		Type     string `json:"type"`
		Progress bool   `json:"progress"`
	}
	if json.Unmarshal(line, &r) != nil {
		return "", false
	}
	return r.Type, r.Progress
}

// Send dials the host at socketPath (retrying as Dial does), sends req,
// reads one response and closes the connection. Errors are as for Dial and
// Conn.Do.
func Send(ctx context.Context, socketPath string, req Request) (Response, error) {
	c, err := Dial(ctx, socketPath)
	if err != nil {
		return Response{}, err
	}
	defer c.Close()
	return c.Do(ctx, req)
}

// Result is the outcome of sending a request to one host.
type Result struct {
	// Socket is the host's socket path.
	Socket string
	// Response is the host's response; on a *RemoteError or *VersionError
	// it is the response that caused it, otherwise zero when Err is set.
	Response Response
	// Err is the error from Conn.Do, or a dial error other than
	// ECONNREFUSED and ENOENT.
	Err error
	// Peer is the process listening on Socket (Conn.Peer), when the dial
	// succeeded; its Checked is false when the kernel does not say.
	Peer Peer
}

// Broadcast sends req to every host of the project concurrently and returns
// one Result per live host, in the order of Hosts. Each host is dialed once,
// without Dial's retries. A socket whose dial is refused twice, 50 ms apart,
// belongs to a dead host: Broadcast removes the file and leaves it out of
// the results. A socket that vanished meanwhile (its host exited) is left
// out too. A socket that accepts is never removed. Each exchange ends when
// ctx does; callers should give ctx a deadline.
//
// No hosts, or no socket directory, gives an empty slice. When the socket
// directory cannot be read or is not private (see Hosts), the result is a
// single Result whose Socket is empty and whose Err says why.
func Broadcast(ctx context.Context, projectRoot string, req Request) []Result {
	return fanOut(ctx, projectRoot, req, sendOnce)
}

// fanOut sends req with send to every host of the project at projectRoot
// concurrently and returns the live hosts' results in the order of Hosts
// (Broadcast's rules; send reports a host that is not live).
func fanOut(ctx context.Context, projectRoot string, req Request, send func(context.Context, string, Request) (Result, bool)) []Result {
	paths, err := Hosts(projectRoot)
	if err != nil {
		return []Result{{Err: err}}
	}
	results := make([]Result, len(paths))
	live := make([]bool, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], live[i] = send(ctx, path, req)
		}()
	}
	wg.Wait()
	out := []Result{}
	for i := range results {
		if live[i] {
			out = append(out, results[i])
		}
	}
	return out
}

// sendOnce is one Broadcast exchange. live is false for a dead host's
// leftover socket (removed) or a socket that no longer exists.
func sendOnce(ctx context.Context, path string, req Request) (r Result, live bool) {
	c, r, live := dialOnce(ctx, path)
	if c == nil {
		return r, live
	}
	defer c.Close()
	r.Peer, _ = c.Peer()
	r.Response, r.Err = c.Do(ctx, req)
	return r, true
}

// dialOnce is Broadcast's dial of one host: a connection, else (c nil) the
// Result to report and whether the host is live, as for sendOnce.
func dialOnce(ctx context.Context, path string) (c *Conn, r Result, live bool) {
	r.Socket = path
	c, err := dial(ctx, path, 0)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Refused may also mean "bound but not yet listening": look again.
		select {
		case <-time.After(dialRetryInterval):
		case <-ctx.Done():
			r.Err = err
			return nil, r, true
		}
		c, err = dial(ctx, path, 0)
		if errors.Is(err, syscall.ECONNREFUSED) {
			removeSocket(path)
			return nil, r, false
		}
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil, r, false
	}
	if err != nil {
		r.Err = err
		return nil, r, true
	}
	return c, r, true
}

// removeSocket removes path if it is still a socket.
func removeSocket(path string) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		os.Remove(path)
	}
}
