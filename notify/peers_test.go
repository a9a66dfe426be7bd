package notify

import (
	"bufio"
	"encoding/json"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// fakeHost listens on a socket of the project at root and answers each
// request line with a status response naming the request type, counting
// the connections it accepts. With once, it closes each connection after
// its first answer. It returns the counts of connections accepted and of
// requests read.
func fakeHost(t *testing.T, root string, once bool) (accepted, requests *atomic.Int32) {
	t.Helper()
	dir, err := MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, ulid.Make().String()+".sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted, requests = new(atomic.Int32), new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					requests.Add(1)
					var req Request
					json.Unmarshal(line, &req)
					b, _ := json.Marshal(Response{V: req.V, Type: "status", Label: req.Type})
					if _, err := c.Write(append(b, '\n')); err != nil || once {
						return
					}
				}
			}()
		}
	}()
	return accepted, requests
}

// TestPeersKeepTheirConnection: two requests through Peers reach a host
// over one connection; a host that started after the first request gets
// the second; Close closes what was kept.
func TestPeersKeepTheirConnection(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	accepted, _ := fakeHost(t, root, false)
	p := NewPeers(root)
	defer p.Close()
	for _, typ := range []string{"trees", "build_complete"} {
		rs := p.Broadcast(timeout(t), Request{Type: typ})
		if len(rs) != 1 || rs[0].Err != nil || rs[0].Response.Label != typ {
			t.Fatalf("%s: %+v, want one answer to it", typ, rs)
		}
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the host accepted %d connections for two requests, want 1", n)
	}
	l := serve(t, root, statusHandler)
	rs := p.Broadcast(timeout(t), Request{Type: "status"})
	if len(rs) != 2 || rs[0].Err != nil || rs[1].Err != nil {
		t.Fatalf("with a second host: %+v, want two answers", rs)
	}
	if rs[0].Socket != l.Path() && rs[1].Socket != l.Path() {
		t.Errorf("the host started after the first request got none: %+v", rs)
	}
	p.Close()
	if rs := p.Broadcast(timeout(t), Request{Type: "status"}); len(rs) != 2 || rs[0].Err != nil || rs[1].Err != nil {
		t.Errorf("after Close: %+v, want two answers over new connections", rs)
	}
}

// TestPeersRedialAClosedConnection: a host that closed the kept connection
// (idle, or restarted on the same socket) gets the next request over a new
// one, with no error.
func TestPeersRedialAClosedConnection(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	accepted, _ := fakeHost(t, root, true)
	p := NewPeers(root)
	defer p.Close()
	for _, typ := range []string{"trees", "build_complete"} {
		rs := p.Broadcast(timeout(t), Request{Type: typ})
		if len(rs) != 1 || rs[0].Err != nil || rs[0].Response.Label != typ {
			t.Fatalf("%s: %+v, want one answer to it", typ, rs)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("the host accepted %d connections, want 2 (the first closed after its answer)", n)
	}
}

// TestPeersConnectSendsNothing: Connect dials every host and sends no
// request; the next Broadcast uses the connection it made.
func TestPeersConnectSendsNothing(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	accepted, requests := fakeHost(t, root, false)
	p := NewPeers(root)
	defer p.Close()
	p.Connect(timeout(t))
	deadline := time.Now().Add(10 * time.Second)
	for accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if a, r := accepted.Load(), requests.Load(); a != 1 || r != 0 {
		t.Fatalf("after Connect the host accepted %d connections and read %d requests, want 1 and 0", a, r)
	}
	if rs := p.Broadcast(timeout(t), Request{Type: "trees"}); len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("Broadcast after Connect: %+v", rs)
	}
	if a, r := accepted.Load(), requests.Load(); a != 1 || r != 1 {
		t.Errorf("after Broadcast the host accepted %d connections and read %d requests, want 1 and 1", a, r)
	}
}
