package credentials

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBroker listens on a unix socket in a short temporary directory and
// answers each connection with answer(request line). It points the
// environment at itself.
func fakeBroker(t *testing.T, answer func(req []byte) string) (requests chan []byte) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cred")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = make(chan []byte, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				line, err := bufio.NewReader(conn).ReadBytes('\n')
				if err != nil {
					return
				}
				requests <- line
				if a := answer(line); a != "" {
					conn.Write([]byte(a))
				}
				// Hold the connection until the client closes it, so a
				// missing answer is a hang, not an EOF.
				conn.Read(make([]byte, 1))
			}()
		}
	}()
	t.Setenv(EnvSocket, sock)
	return requests
}

// meta is the _meta of a tools/call the host gave the token tok.
func meta(tok string) map[string]any { return map[string]any{MetaKey: tok, "progressToken": 1} }

func TestGetSecret(t *testing.T) {
	reqs := fakeBroker(t, func([]byte) string { return `{"v":2,"secret":"s3cr\"et"}` + "\n" })
	got, err := Get(context.Background(), "inventory-api", meta("tok-1"))
	if err != nil {
		t.Fatal(err)
	}
	if got != `s3cr"et` {
		t.Fatalf("secret = %q", got)
	}
	line := <-reqs
	if want := `{"v":2,"scope":"inventory-api","call":"tok-1"}` + "\n"; string(line) != want {
		t.Fatalf("request line = %q, want %q", line, want)
	}
}

func TestGetRefused(t *testing.T) {
	fakeBroker(t, func([]byte) string {
		return `{"v":2,"error":{"code":"no_call_in_flight","message":"no granted tools/call using this scope is in flight"}}` + "\n"
	})
	_, err := Get(context.Background(), "inventory-api", meta("tok"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if e.Scope != "inventory-api" || e.Code != "no_call_in_flight" || !strings.Contains(e.Message, "in flight") {
		t.Fatalf("err = %+v", e)
	}
	if want := "credential inventory-api: no_call_in_flight: no granted tools/call using this scope is in flight"; err.Error() != want {
		t.Fatalf("message = %q, want %q", err, want)
	}
}

func TestGetNotUnderHost(t *testing.T) {
	t.Setenv(EnvSocket, "")
	for _, m := range []map[string]any{nil, meta("tok")} {
		_, err := Get(context.Background(), "inventory-api", m)
		if !errors.Is(err, ErrNotUnderHost) {
			t.Fatalf("no socket, meta %v: err = %v, want ErrNotUnderHost", m, err)
		}
		if !strings.Contains(err.Error(), "credential inventory-api: not_under_host: not running under mcpepoch host") {
			t.Fatalf("message = %q", err)
		}
	}
}

// Without the call's token (no _meta, another request's, a token that is
// not a string) Get asks nothing and says to pass the request's _meta.
func TestGetNoCallToken(t *testing.T) {
	reqs := fakeBroker(t, func([]byte) string { return `{"v":2,"secret":"x"}` + "\n" })
	for _, m := range []map[string]any{nil, {}, {"progressToken": 1}, {MetaKey: 7}, {MetaKey: ""}} {
		_, err := Get(context.Background(), "inventory-api", m)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeNoCall || errors.Is(err, ErrNotUnderHost) || !strings.Contains(err.Error(), "_meta") {
			t.Fatalf("meta %v: err = %v, want code %s", m, err, CodeNoCall)
		}
	}
	select {
	case line := <-reqs:
		t.Fatalf("asked the host without a call token: %q", line)
	default:
	}
	if CallToken(meta("abc")) != "abc" {
		t.Fatal("CallToken")
	}
}

func TestGetNoBroker(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gone.sock")
	t.Setenv(EnvSocket, sock)
	_, err := Get(context.Background(), "inventory-api", meta("tok"))
	if err == nil || !strings.Contains(err.Error(), sock) {
		t.Fatalf("err = %v, want one naming %s", err, sock)
	}
}

// A broken answer is an error that never quotes the line, which may hold a
// secret.
func TestGetBadAnswer(t *testing.T) {
	const planted = "PLANTED-7f3a"
	for name, a := range map[string]string{
		"not json":       planted + "\n",
		"truncated":      `{"v":2,"secret":"` + planted,
		"wrong version":  `{"v":1,"secret":"` + planted + `"}` + "\n",
		"neither":        `{"v":2}` + "\n",
		"json with junk": `{"v":2,"secret":"` + planted + `"} x` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if name == "truncated" {
				fakeBrokerEOF(t, a)
			} else {
				fakeBroker(t, func([]byte) string { return a })
			}
			got, err := Get(context.Background(), "inventory-api", meta("tok"))
			if err == nil {
				t.Fatalf("no error, secret %q", got)
			}
			if strings.Contains(err.Error(), planted) {
				t.Fatalf("error quotes the answer: %v", err)
			}
		})
	}
}

// fakeBrokerEOF points the environment at a broker that writes partial
// and closes the connection.
func fakeBrokerEOF(t *testing.T, partial string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cred")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		bufio.NewReader(conn).ReadBytes('\n')
		conn.Write([]byte(partial))
		conn.Close()
	}()
	t.Setenv(EnvSocket, sock)
}

// A broker that never answers holds Get only as long as ctx allows.
func TestGetContext(t *testing.T) {
	fakeBroker(t, func([]byte) string { return "" })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := Get(ctx, "inventory-api", meta("tok"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = Get(ctx, "inventory-api", meta("tok"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// An answer longer than maxAnswer is refused rather than read without
// bound.
func TestGetLongAnswer(t *testing.T) {
	fakeBroker(t, func([]byte) string {
		b, _ := json.Marshal(map[string]any{"v": 2, "secret": strings.Repeat("x", maxAnswer+10)})
		return string(b) + "\n"
	})
	_, err := Get(context.Background(), "inventory-api", meta("tok"))
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v", err)
	}
}
