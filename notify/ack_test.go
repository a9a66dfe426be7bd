package notify

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// silentHost binds a socket of the project at root that accepts and never
// answers (a stopped host, or a same-user process that is no host at all),
// reading what it is sent; it returns the socket's path and the count of
// request bytes read.
func silentHost(t *testing.T, root string) (string, *atomic.Int64) {
	t.Helper()
	dir, err := MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ulid.Make().String()+SocketSuffix)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	read := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					read.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return path, read
}

// TestAckBeforeAnswer: a request with Ack gets a "received" line at once,
// while the handler still works, and then its answer; Do reads past the
// acknowledgement.
func TestAckBeforeAnswer(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	release := make(chan struct{})
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		select {
		case <-release:
		case <-ctx.Done(): // the test failed
		}
		return statusHandler(ctx, peer, req)
	})
	c, r := rawConn(t, l.Path())
	got := exchange(t, c, r, `{"v":1,"type":"build_complete","ack":true}`)
	if got.Type != TypeReceived || got.Run != l.Name() || got.V != ProtocolVersion {
		t.Fatalf("first line %+v, want type %q with run %s", got, TypeReceived, l.Name())
	}
	close(release)
	if got := readResponse(t, r); got.Type != "status" || got.Label != "build_complete" {
		t.Fatalf("answer %+v, want the handler's", got)
	}
	// Without ack there is no acknowledgement.
	if got := exchange(t, c, r, `{"v":1,"type":"status"}`); got.Type != "status" {
		t.Fatalf("answer without ack %+v, want the handler's", got)
	}
	resp, err := Send(timeout(t), l.Path(), Request{Type: "restart", Ack: true})
	if err != nil || resp.Type != "status" || resp.Label != "restart" {
		t.Fatalf("Send with ack: %+v, %v; want the handler's answer", resp, err)
	}
}

// TestAckedAnswerMayTakeLong: once a host acknowledged, its answer is
// waited for past AnswerWait and past SilenceWait while the host says it
// works (progress lines), until the request's context ends.
func TestAckedAnswerMayTakeLong(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		wait := SilenceWait + 2*ProgressInterval
		if req.Type != "build_complete" {
			wait = ProgressInterval + ProgressInterval/2 // long enough for one progress line
		}
		time.Sleep(wait)
		return statusHandler(ctx, peer, req)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := Send(ctx, l.Path(), Request{Type: "build_complete", Ack: true})
	if err != nil || resp.Label != "build_complete" {
		t.Fatalf("Send: %+v, %v; want the answer that came after the acknowledgement and the progress lines", resp, err)
	}
	// On the wire: the acknowledgement promises progress, working lines
	// follow, then the answer.
	c, r := rawConn(t, l.Path())
	if got := exchange(t, c, r, `{"v":1,"type":"restart","ack":true,"progress":true}`); got.Type != TypeReceived || !got.Progress {
		t.Fatalf("acknowledgement %+v, want %q with progress", got, TypeReceived)
	}
	if got := readResponse(t, r); got.Type != TypeWorking || got.Run != l.Name() {
		t.Fatalf("line after the acknowledgement %+v, want %q", got, TypeWorking)
	}
}

// ackingHost binds a socket of the project at root that acknowledges
// every request line (as a host of the version before progress lines
// does, or a same-user process that only pretends) and then sends
// nothing more; it returns the socket's path.
func ackingHost(t *testing.T, root string) string {
	t.Helper()
	dir, err := MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ulid.Make().String()+SocketSuffix)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					c.Write([]byte(`{"v":1,"type":"received","run":"01J9Z6W0C2H6F0S8A1B3E5G7K9"}` + "\n"))
				}
			}()
		}
	}()
	return path
}

// TestAckThenSilentNotWaitedFor: a socket that acknowledges and then
// sends nothing ends the exchange after SilenceWait, not at the caller's
// deadline, with a *NotAnsweringError that says it acknowledged.
func TestAckThenSilentNotWaitedFor(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	path := ackingHost(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Send(ctx, path, Request{Type: "build_complete", Ack: true})
	na, ok := errors.AsType[*NotAnsweringError](err)
	if !ok || na.Socket != path || !na.Acked || na.Progress || na.Wait != SilenceWait {
		t.Fatalf("err = %v (%+v), want a *NotAnsweringError for %s: acknowledged, no progress promised, silent for SilenceWait", err, na, path)
	}
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("err = %v, ctx %v: want DeadlineExceeded before the caller's deadline", err, ctx.Err())
	}
	if want := "silent: acknowledged the build_complete request, then nothing for 5s"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestSilentHostNotAnswering: a socket that accepts and never answers ends
// an exchange with Ack after AnswerWait, not at the caller's deadline, with
// a *NotAnsweringError naming the socket.
func TestSilentHostNotAnswering(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	path, _ := silentHost(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Send(ctx, path, Request{Type: "build_complete", Ack: true})
	na, ok := errors.AsType[*NotAnsweringError](err)
	if !ok || na.Socket != path || na.Type != "build_complete" || na.Wait != AnswerWait {
		t.Fatalf("err = %v, want a *NotAnsweringError for %s", err, path)
	}
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("err = %v, ctx %v: want DeadlineExceeded before the caller's deadline", err, ctx.Err())
	}
}

// TestPeersAskASilentHostOnce: a host that let one request through Peers
// run out of time is not sent the next: its Result says it is not
// answering at once, while a live host beside it still answers.
func TestPeersAskASilentHostOnce(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	path, read := silentHost(t, root)
	l := serve(t, root, statusHandler)
	p := NewPeers(root)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	rs := p.Broadcast(ctx, Request{Type: "trees"})
	cancel()
	if len(rs) != 2 {
		t.Fatalf("trees: %+v, want two results", rs)
	}
	// Wait until the silent host has read the trees request.
	for i := 0; read.Load() == 0 && i < 500; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	before := read.Load()
	rs = p.Broadcast(timeout(t), Request{Type: "build_complete", Ack: true})
	var silent, live bool
	for _, r := range rs {
		switch r.Socket {
		case path:
			na, ok := errors.AsType[*NotAnsweringError](r.Err)
			silent = ok && na.Type == "trees"
		case l.Path():
			live = r.Err == nil && r.Response.Label == "build_complete"
		}
	}
	if !silent || !live {
		t.Fatalf("build_complete: %+v, want the silent host not answering (trees) and the live one answering", rs)
	}
	time.Sleep(100 * time.Millisecond)
	if n := read.Load(); n != before || before == 0 {
		t.Errorf("the silent host read %d bytes, then %d: want the trees request only", before, n)
	}
}
