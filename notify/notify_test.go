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
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// newRoot returns a fresh, short, symlink-evaluated project root whose
// default socket directory fits MaxSocketPath.
func newRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "notify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// serve listens for the project at root under a fresh run id and serves h
// until the test ends; it returns the listener.
func serve(t *testing.T, root string, h Handler) *Listener {
	t.Helper()
	l, err := Listen(root, ulid.Make().String())
	if err != nil {
		t.Fatal(err)
	}
	serveListener(t, l, h)
	return l
}

func serveListener(t *testing.T, l *Listener, h Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// statusHandler answers every request with a status response naming the
// request type in Label and this process in PID.
func statusHandler(ctx context.Context, peer Peer, req Request) Response {
	return Response{Type: "status", Label: req.Type, Epoch: "01J9Z6W0C2H6F0S8A1B3E5G7K9", PID: os.Getpid()}
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawConn dials path and returns a line reader and a line writer.
func rawConn(t *testing.T, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// exchange writes line plus newline and decodes one response line.
func exchange(t *testing.T, c net.Conn, r *bufio.Reader, line string) Response {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("write %q: %v", line, err)
	}
	return readResponse(t, r)
}

func readResponse(t *testing.T, r *bufio.Reader) Response {
	t.Helper()
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	var resp Response
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("response %q: %v", b, err)
	}
	return resp
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	var (
		mu      sync.Mutex
		gotReq  Request
		gotPeer Peer
	)
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		mu.Lock()
		gotReq, gotPeer = req, peer
		mu.Unlock()
		return Response{Type: "restarted", Label: "weather", OldEpoch: "01J9Z6W0C2H6F0S8A1B3E5G7K9",
			NewEpoch: "01J9Z6Y3N4D5X8QK2M7R3T1V0A", OldPID: 4711, NewPID: 4790}
	})
	if want := filepath.Join(root, ".mcpepoch", "sock", l.Name()+".sock"); l.Path() != want {
		t.Fatalf("Path = %q, want %q", l.Path(), want)
	}
	req := Request{Type: "build_complete", Build: ulid.Make().String(),
		Manifest: filepath.Join(root, ".mcpepoch", "manifest.toml"), ExitCode: 3,
		Payload: json.RawMessage(`{"changed":["dist/server.js"]}`)}
	resp, err := Send(timeout(t), l.Path(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := Response{V: 1, Type: "restarted", Label: "weather", Run: l.Name(), OldEpoch: "01J9Z6W0C2H6F0S8A1B3E5G7K9",
		NewEpoch: "01J9Z6Y3N4D5X8QK2M7R3T1V0A", OldPID: 4711, NewPID: 4790}
	if fmt.Sprint(resp) != fmt.Sprint(want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
	mu.Lock()
	defer mu.Unlock()
	req.V = ProtocolVersion
	if gotReq.V != 1 || gotReq.Type != req.Type || gotReq.Build != req.Build || gotReq.Manifest != req.Manifest ||
		gotReq.ExitCode != 3 || string(gotReq.Payload) != string(req.Payload) {
		t.Errorf("handler got %+v, want %+v", gotReq, req)
	}
	switch runtime.GOOS {
	case "linux", "darwin":
		if !gotPeer.Checked || gotPeer.UID != os.Geteuid() || gotPeer.PID != os.Getpid() {
			t.Errorf("peer = %+v, want checked uid %d pid %d", gotPeer, os.Geteuid(), os.Getpid())
		}
	default:
		if gotPeer.Checked || gotPeer.UID != -1 {
			t.Errorf("peer = %+v, want unchecked uid -1", gotPeer)
		}
	}
}

func TestWireShape(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Response{V: 1, Type: "restarted", Run: "R", OldEpoch: "a", NewEpoch: "b", OldPID: 1, NewPID: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"v":1,"type":"restarted","run":"R","oldEpoch":"a","newEpoch":"b","oldPid":1,"newPid":2}`; string(b) != want {
		t.Errorf("response JSON\n got %s\nwant %s", b, want)
	}
	b, err = json.Marshal(Request{V: 1, Type: "build_complete", Build: "B", Manifest: "/m", ExitCode: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"v":1,"type":"build_complete","build":"B","manifest":"/m","exitCode":2}`; string(b) != want {
		t.Errorf("request JSON\n got %s\nwant %s", b, want)
	}
	// A host's raw reply is one line with "v" first.
	root := newRoot(t)
	l := serve(t, root, func(context.Context, Peer, Request) Response { return ErrorResponse(CodeUnknownType, "no") })
	c, r := rawConn(t, l.Path())
	c.Write([]byte(`{"v":1,"type":"frobnicate"}` + "\n"))
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"v":1,"type":"error","run":"` + l.Name() + `","error":"no","code":"unknown_type"}` + "\n"; line != want {
		t.Errorf("raw reply\n got %q\nwant %q", line, want)
	}
}

func TestSeveralRequestsOnOneConnection(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	var calls atomic.Int32
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		n := calls.Add(1)
		return Response{Type: "status", Label: fmt.Sprintf("%s#%d", req.Type, n)}
	})
	c, err := Dial(timeout(t), l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, typ := range []string{"status", "ping", "status"} {
		resp, err := c.Do(timeout(t), Request{Type: typ})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if want := fmt.Sprintf("%s#%d", typ, i+1); resp.Label != want {
			t.Errorf("request %d: label %q, want %q", i, resp.Label, want)
		}
	}
}

func TestMalformedLines(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	var calls atomic.Int32
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		calls.Add(1)
		return statusHandler(ctx, peer, req)
	})
	c, r := rawConn(t, l.Path())
	for _, tc := range []struct{ line, want string }{
		{"not json", "not a valid request object"},
		{"", "empty request line"},
		{"   ", "empty request line"},
		{"[1,2]", "not a valid request object"},
		{"{}", `missing field "v"`},
		{`{"v":"1","type":"status"}`, "Request.v"},
		{`{"v":1}`, `missing field "type"`},
		{`{"v":1,"type":"status","payload":}`, "not a valid request object"},
		{`{"v":1,"type":"status"} trailing`, "not a valid request object"},
	} {
		resp := exchange(t, c, r, tc.line)
		if resp.V != 1 || resp.Type != TypeError || resp.Code != CodeBadRequest || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("line %q: got %+v, want bad_request containing %q", tc.line, resp, tc.want)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler called %d times for malformed lines", n)
	}
	// The same connection still serves a good request.
	if resp := exchange(t, c, r, `{"v":1,"type":"status"}`); resp.Type != "status" || resp.Label != "status" {
		t.Errorf("good request after bad ones: %+v", resp)
	}

	// An overlong line is answered, then the connection closes.
	c2, r2 := rawConn(t, l.Path())
	go c2.Write([]byte(strings.Repeat("x", MaxLine+100) + "\n"))
	resp := readResponse(t, r2)
	if resp.Code != CodeBadRequest || !strings.Contains(resp.Error, "exceeds 1048576 bytes") {
		t.Errorf("overlong line: %+v", resp)
	}
	if _, err := r2.ReadByte(); err == nil {
		t.Errorf("connection still open after overlong line")
	}
	// A line of exactly MaxLine bytes is read (and rejected as JSON).
	c3, r3 := rawConn(t, l.Path())
	go c3.Write([]byte(strings.Repeat(" ", MaxLine-2) + "{}\n"))
	if resp := readResponse(t, r3); resp.Code != CodeBadRequest || !strings.Contains(resp.Error, `missing field "v"`) {
		t.Errorf("line of MaxLine bytes: %+v", resp)
	}
	// The host still serves new connections.
	if resp, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil || resp.Label != "status" {
		t.Errorf("after malformed input: %+v, %v", resp, err)
	}
}

func TestHandlerFailures(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		switch req.Type {
		case "panic":
			panic("boom")
		case "empty":
			return Response{}
		case "badpayload":
			return Response{Type: "status", Payload: json.RawMessage("{")}
		case "status":
			return statusHandler(ctx, peer, req)
		}
		return ErrorResponse(CodeUnknownType, fmt.Sprintf("unknown request type %q", req.Type))
	})
	for _, tc := range []struct{ typ, code, msg string }{
		{"panic", CodeInternal, "panicked: boom"},
		{"empty", CodeInternal, "without type"},
		{"badpayload", CodeInternal, "cannot encode"},
		{"frobnicate", CodeUnknownType, `unknown request type "frobnicate"`},
	} {
		resp, err := Send(timeout(t), l.Path(), Request{Type: tc.typ})
		re, ok := errors.AsType[*RemoteError](err)
		if !ok || re.Code != tc.code || !strings.Contains(re.Message, tc.msg) {
			t.Errorf("%s: err = %v, want RemoteError %s containing %q", tc.typ, err, tc.code, tc.msg)
		}
		if resp.Type != TypeError || resp.Run != l.Name() {
			t.Errorf("%s: response %+v", tc.typ, resp)
		}
	}
	if _, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil {
		t.Errorf("after handler failures: %v", err)
	}
}

func TestVersionMismatch(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	var calls atomic.Int32
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		calls.Add(1)
		return statusHandler(ctx, peer, req)
	})

	// A client from the future talks to this host.
	resp, err := Send(timeout(t), l.Path(), Request{V: 2, Type: "status"})
	ve, ok := errors.AsType[*VersionError](err)
	if !ok || ve.Ours != 2 || ve.Theirs != 1 {
		t.Fatalf("err = %v, want VersionError{Ours: 2, Theirs: 1}", err)
	}
	if resp.Code != CodeUnsupportedVersion || !strings.Contains(resp.Error, "protocol version 2 not supported") {
		t.Errorf("response %+v", resp)
	}
	if calls.Load() != 0 {
		t.Errorf("handler saw a request of another version")
	}

	// This client talks to a host from the future.
	path := filepath.Join(root, "future.sock")
	fl, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	go func() {
		for {
			c, err := fl.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadBytes('\n')
			c.Write([]byte(`{"v":2,"type":"restarted","run":"X"}` + "\n"))
			c.Close()
		}
	}()
	resp, err = Send(timeout(t), path, Request{Type: "status"})
	if ve, ok := errors.AsType[*VersionError](err); !ok || ve.Ours != 1 || ve.Theirs != 2 {
		t.Fatalf("err = %v, want VersionError{Ours: 1, Theirs: 2}", err)
	}
	if resp.Run != "X" {
		t.Errorf("response not returned with VersionError: %+v", resp)
	}
	if got := err.Error(); got != "protocol version mismatch: peer speaks v2, this side v1" {
		t.Errorf("message %q", got)
	}
}

func TestSendHonoursContext(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	path := filepath.Join(root, "silent.sock")
	sl, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // never answers
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Send(ctx, path, Request{Type: "status"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %v past a 200ms deadline", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = Send(ctx, path, Request{Type: "status"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want Canceled", err)
	}
}

func TestSendWaitsForStartingHost(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	name := ulid.Make().String()
	dir, err := Dir(root)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	time.AfterFunc(150*time.Millisecond, func() {
		l, err := Listen(root, name)
		if err == nil {
			serveListener(t, l, statusHandler)
		}
		errc <- err
	})
	resp, err := Send(timeout(t), filepath.Join(dir, name+".sock"), Request{Type: "status"})
	if lerr := <-errc; lerr != nil {
		t.Fatal(lerr)
	}
	if err != nil || resp.Run != name {
		t.Fatalf("Send to a starting host: %+v, %v", resp, err)
	}

	// With nothing ever listening, Send gives up after about a second.
	start := time.Now()
	_, err = Send(timeout(t), filepath.Join(dir, ulid.Make().String()+".sock"), Request{Type: "status"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want ENOENT", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 8*time.Second {
		t.Errorf("gave up after %v, want about 1s", d)
	}
}

// staleSocket leaves a socket file at path that nobody listens on, as a
// host killed without cleanup does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		t.Fatalf("stale socket not left behind: %v", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	dir, err := MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	name := ulid.Make().String()
	staleSocket(t, filepath.Join(dir, name+".sock"))
	l, err := Listen(root, name)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	serveListener(t, l, statusHandler)
	if resp, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil || resp.Run != name {
		t.Errorf("Send: %+v, %v", resp, err)
	}
}

func TestListenNeverStealsLiveSocket(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	_, err := Listen(root, l.Name())
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), l.Path()) {
		t.Fatalf("second Listen: err = %v, want ErrInUse naming %s", err, l.Path())
	}
	if resp, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil || resp.Run != l.Name() {
		t.Errorf("first host after second Listen: %+v, %v", resp, err)
	}

	// A non-socket file at the path is reported and left alone.
	name := ulid.Make().String()
	path := filepath.Join(filepath.Dir(l.Path()), name+".sock")
	if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(root, name); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep" {
		t.Errorf("regular file disturbed: %q, %v", b, err)
	}
}

func TestCloseRemovesSocket(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l, err := Listen(root, ulid.Make().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(l.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Serve returns, and removes the socket, when its context ends.
	l, err = Listen(root, ulid.Make().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, statusHandler) }()
	if _, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := os.Lstat(l.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file after Serve returned: %v", err)
	}
}

func TestBroadcast(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	if got := Broadcast(timeout(t), root, Request{Type: "status"}); got == nil || len(got) != 0 {
		t.Errorf("Broadcast with no socket directory = %#v, want empty slice", got)
	}
	if got, err := Hosts(root); err != nil || len(got) != 0 {
		t.Errorf("Hosts with no socket directory = %v, %v", got, err)
	}

	a := serve(t, root, statusHandler)
	b := serve(t, root, statusHandler)
	c := serve(t, root, func(context.Context, Peer, Request) Response {
		return ErrorResponse(CodeInternal, "identity failed")
	})
	dir := filepath.Dir(a.Path())
	stale := filepath.Join(dir, ulid.Make().String()+".sock")
	staleSocket(t, stale)
	// Files that are not host sockets are neither contacted nor removed.
	junk := []string{filepath.Join(dir, "README"), filepath.Join(dir, ulid.Make().String()+".sock.tmp")}
	for _, p := range junk {
		os.WriteFile(p, nil, 0o600)
	}
	notULID := filepath.Join(dir, "not-a-ulid.sock")
	staleSocket(t, notULID)

	hosts, err := Hosts(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 4 {
		t.Fatalf("Hosts = %v, want 3 live and 1 stale", hosts)
	}

	results := Broadcast(timeout(t), root, Request{Type: "status"})
	want := []*Listener{a, b, c}
	if len(results) != len(want) {
		t.Fatalf("Broadcast = %+v, want %d results", results, len(want))
	}
	for i, l := range want {
		r := results[i]
		if r.Socket != l.Path() || r.Response.Run != l.Name() {
			t.Errorf("result %d = %+v, want socket %s run %s", i, r, l.Path(), l.Name())
		}
		if l == c {
			if re, ok := errors.AsType[*RemoteError](r.Err); !ok || re.Message != "identity failed" {
				t.Errorf("result %d err = %v, want RemoteError", i, r.Err)
			}
		} else if r.Err != nil || r.Response.Type != "status" || r.Response.PID != os.Getpid() {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale socket not removed: %v", err)
	}
	for _, p := range append(junk, notULID, a.Path(), b.Path(), c.Path()) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// TestHelperProcess is not a test: it is the body of the child processes
// the tests start (a host in another process, or a client under another
// uid).
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("NOTIFY_HELPER") {
	case "":
		return
	case "host":
		l, err := Listen(os.Getenv("NOTIFY_ROOT"), os.Getenv("NOTIFY_NAME"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(l.Path())
		l.Serve(context.Background(), statusHandler)
		os.Exit(0)
	case "send":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := Send(ctx, os.Getenv("NOTIFY_SOCKET"), Request{Type: "status"})
		re, isRemote := errors.AsType[*RemoteError](err)
		switch {
		case err == nil:
			fmt.Println("ok", resp.Type)
		case isRemote:
			fmt.Println("remote", re.Code, re.Message)
		case errors.Is(err, fs.ErrPermission):
			fmt.Println("eacces")
		default:
			fmt.Println("error", err)
		}
		os.Exit(0)
	}
}

// helper returns a command running TestHelperProcess in mode with env.
func helper(t *testing.T, exe, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{"NOTIFY_HELPER=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestBroadcastRemovesDeadHost(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := ulid.Make().String()
	cmd := helper(t, exe, "host", "NOTIFY_ROOT="+root, "NOTIFY_NAME="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("host process: %v", err)
	}
	path := strings.TrimSpace(line)

	results := Broadcast(timeout(t), root, Request{Type: "status"})
	if len(results) != 1 || results[0].Err != nil || results[0].Socket != path ||
		results[0].Response.Run != name || results[0].Response.PID != cmd.Process.Pid {
		t.Fatalf("Broadcast to host process %d = %+v", cmd.Process.Pid, results)
	}
	kernelSays := runtime.GOOS == "linux" || runtime.GOOS == "darwin"
	if peer := results[0].Peer; peer.Checked != kernelSays || kernelSays && (peer.PID != cmd.Process.Pid || peer.UID != os.Geteuid()) {
		t.Errorf("Broadcast's peer of host process %d = %+v, want the kernel's word on the listener", cmd.Process.Pid, peer)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("killed host left no socket to clean: %v", err)
	}
	if results := Broadcast(timeout(t), root, Request{Type: "status"}); len(results) != 0 {
		t.Errorf("Broadcast after the host died = %+v, want none", results)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dead host's socket not removed: %v", err)
	}
}
