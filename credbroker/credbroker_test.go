package credbroker

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/notify"
)

// testCall is the token of the one call the test Decider knows.
var testCall = NewToken()

// serve starts a broker whose Decider hands out "s3cr3t" for the token of
// its one call and returns it with the refusals it made itself.
func serve(t testing.TB) (*Broker, *refusals) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cb") // short: a socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := Listen(filepath.Join(dir, "e.cred"))
	if err != nil {
		t.Fatal(err)
	}
	r := &refusals{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Serve(ctx, func(_ context.Context, peer notify.Peer, req credwire.Request) credwire.Answer {
			if peer.PID != os.Getpid() || !TokenEqual(req.Call, testCall) {
				return Refusal(credwire.CodeNotInCall, "no")
			}
			return Issue("s3cr3t")
		}, r.add)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b, r
}

type refusals struct {
	mu    sync.Mutex
	codes []string
}

func (r *refusals) add(_ notify.Peer, _ string, code string) {
	r.mu.Lock()
	r.codes = append(r.codes, code)
	r.mu.Unlock()
}

func (r *refusals) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.codes, ",")
}

// exchange sends raw and returns the answer line.
func exchange(t testing.TB, path, raw string) credwire.Answer {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// A refusal over the bound may be written and the connection closed
	// before the request is: the write fails, the answer is still there.
	c.Write([]byte(raw))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the answer to %.40q: %v", raw, err)
	}
	var a credwire.Answer
	if err := json.Unmarshal(line, &a); err != nil || a.V != credwire.Version {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

func request(call string) string {
	b, _ := json.Marshal(credwire.Request{V: credwire.Version, Scope: "api", Call: call})
	return string(b) + "\n"
}

func TestBrokerAnswersOneLine(t *testing.T) {
	b, r := serve(t)
	if fi, err := os.Stat(b.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, %v; want mode 0600", b.Path(), fi, err)
	}
	if a := exchange(t, b.Path(), request(testCall)); a.Secret != "s3cr3t" || a.Error != nil {
		t.Errorf("right token: %v", a)
	}
	if a := exchange(t, b.Path(), request("x"+testCall[1:])); a.Error == nil || a.Error.Code != credwire.CodeNotInCall {
		t.Errorf("wrong token: %v", a)
	}
	for _, tc := range []struct{ raw, code string }{
		// Version 1 carried the epoch's token.
		{"{\"v\":1,\"scope\":\"api\",\"token\":\"t\"}\n", credwire.CodeUnsupportedVersion},
		{"{\"v\":3,\"scope\":\"api\",\"call\":\"t\"}\n", credwire.CodeUnsupportedVersion},
		{"{\"v\":2,\"call\":\"t\"}\n", credwire.CodeBadRequest},
		{"{\"v\":2,\"scope\":\"api\"}\n", credwire.CodeBadRequest},
		{"{\"v\":2,\"scope\":\"api\",\"token\":\"t\"}\n", credwire.CodeBadRequest},
		{"{\"v\":2,\"scope\":\"api\",\"call\":\"t\",\"extra\":1}\n", credwire.CodeBadRequest},
		{"not json\n", credwire.CodeBadRequest},
		{strings.Repeat("x", credwire.MaxLine+10) + "\n", credwire.CodeBadRequest},
	} {
		if a := exchange(t, b.Path(), tc.raw); a.Error == nil || a.Error.Code != tc.code || a.Secret != "" {
			t.Errorf("%.40q: %v, want %s", tc.raw, a, tc.code)
		}
	}
	if got := r.String(); got != "unsupported_version,unsupported_version,bad_request,bad_request,bad_request,bad_request,bad_request,bad_request" {
		t.Errorf("refusals told: %s", got)
	}
	if s := (credwire.Answer{Secret: "s3cr3t"}).String(); strings.Contains(s, "s3cr3t") {
		t.Errorf("Answer.String shows the secret: %s", s)
	}
}

func TestBrokerBoundsSilentAndManyPeers(t *testing.T) {
	b, _ := serve(t)
	// MaxConns peers that send nothing take every slot; one more is busy.
	var conns []net.Conn
	for range MaxConns {
		c, err := net.Dial("unix", b.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond) // let the broker accept them
	if a := exchange(t, b.Path(), request(testCall)); a.Error == nil || a.Error.Code != credwire.CodeBusy {
		t.Errorf("over the bound: %v, want busy", a)
	}
	// A silent peer is dropped after LineTimeout, freeing its slot.
	conns[0].SetReadDeadline(time.Now().Add(LineTimeout + 10*time.Second))
	start := time.Now()
	if _, err := conns[0].Read(make([]byte, 1)); err == nil {
		t.Error("a silent peer got an answer")
	}
	if d := time.Since(start); d > LineTimeout+9*time.Second {
		t.Errorf("a silent peer was kept %s", d)
	}
	for _, c := range conns {
		c.Close()
	}
	waitAnswer := time.Now().Add(20 * time.Second)
	for {
		a := exchange(t, b.Path(), request(testCall))
		if a.Secret == "s3cr3t" {
			break
		}
		if time.Now().After(waitAnswer) {
			t.Fatalf("after the silent peers left: %v", a)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBrokerCloseRemovesTheSocket(t *testing.T) {
	b, _ := serve(t)
	b.Close()
	if _, err := os.Lstat(b.Path()); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v", err)
	}
	if b2, err := Listen(b.Path()); err != nil {
		t.Errorf("listen again: %v", err)
	} else {
		b2.Close()
	}
	if a, b := NewToken(), NewToken(); a == b || len(a) != 64 {
		t.Error("two call tokens are the same, or not 32 bytes in hex")
	}
}

func TestRemoveStaleKeepsLiveBrokers(t *testing.T) {
	live, _ := serve(t)
	dir := filepath.Dir(live.Path())
	// A socket nobody listens on any more: bound, then its listener's
	// file kept past close.
	deadPath := filepath.Join(dir, "d.cred")
	dead, err := net.ListenUnix("unix", &net.UnixAddr{Name: deadPath, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	dead.Close()
	other := filepath.Join(dir, "x.sock")
	if o, err := net.ListenUnix("unix", &net.UnixAddr{Name: other, Net: "unix"}); err == nil {
		o.SetUnlinkOnClose(false)
		o.Close()
	}
	if n := RemoveStale(dir); n != 1 {
		t.Errorf("RemoveStale removed %d, want 1", n)
	}
	for path, want := range map[string]bool{live.Path(): true, deadPath: false, other: true} {
		if _, err := os.Lstat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", path, err == nil, want)
		}
	}
}
