package localapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mcpepoch/mcpepoch/notify"
)

// listen serves m on a fresh project's socket until the test ends and
// returns the socket path.
func listen(t *testing.T, m *Mux) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "localapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := notify.Listen(root, ulid.Make().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, m.Serve) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Path()
}

func send(t *testing.T, sock string, req notify.Request) (notify.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return notify.Send(ctx, sock, req)
}

// counting returns a handler that answers with the request's type and
// counts its calls in n.
func counting(n *atomic.Int32) notify.Handler {
	return func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
		n.Add(1)
		return notify.Response{Type: req.Type, Label: "served"}
	}
}

// wantCode checks that err is a RemoteError with code whose message
// contains msg.
func wantCode(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	re, ok := errors.AsType[*notify.RemoteError](err)
	if !ok || re.Code != code || !strings.Contains(re.Message, msg) {
		t.Errorf("%s: err = %v, want host error %s containing %q", what, err, code, msg)
	}
}

func TestRouteWithoutPermitRefused(t *testing.T) {
	var open, closed atomic.Int32
	m := NewMux([]Route{{Type: "open", Permit: PermitSameUser}, {Type: "closed"}})
	m.Handle("open", counting(&open))
	m.Handle("closed", counting(&closed))
	sock := listen(t, m)

	_, err := send(t, sock, notify.Request{Type: "closed"})
	wantCode(t, "route without permit", err, notify.CodeForbidden, `request type "closed": sender not permitted (permit nobody)`)
	if n := closed.Load(); n != 0 {
		t.Errorf("handler of a route without permit ran %d times", n)
	}
	resp, err := send(t, sock, notify.Request{Type: "open"})
	if err != nil || resp.Type != "open" || resp.Label != "served" || open.Load() != 1 {
		t.Errorf("same-user route: %+v, %v (calls %d)", resp, err, open.Load())
	}
}

func TestUnknownTypeRefused(t *testing.T) {
	var n atomic.Int32
	m := NewMux([]Route{{Type: "status", Permit: PermitSameUser}, {Type: "review", Permit: PermitSameUser}})
	m.Handle("status", counting(&n))
	sock := listen(t, m)
	for _, typ := range []string{"frobnicate", "review"} { // not in the table; in it without a handler
		_, err := send(t, sock, notify.Request{Type: typ})
		wantCode(t, typ, err, notify.CodeUnknownType, `unknown request type "`+typ+`"`)
	}
	if n.Load() != 0 {
		t.Errorf("a handler ran for an unknown type")
	}
}

func TestSameUserPermitRefusesOtherUID(t *testing.T) {
	var n atomic.Int32
	m := NewMux(Routes())
	m.Handle(TypeStatus, counting(&n))
	other := notify.Peer{UID: os.Geteuid() + 1, PID: 1, Checked: true}
	if resp := m.Serve(context.Background(), other, notify.Request{V: 1, Type: TypeStatus}); resp.Code != notify.CodeForbidden {
		t.Errorf("peer of another uid: %+v", resp)
	}
	unchecked := notify.Peer{UID: -1} // a platform without peer credentials: the directory's mode decided
	if resp := m.Serve(context.Background(), unchecked, notify.Request{V: 1, Type: TypeStatus}); resp.Type != TypeStatus {
		t.Errorf("unchecked peer: %+v", resp)
	}
	if n.Load() != 1 {
		t.Errorf("handler calls = %d, want 1", n.Load())
	}
}

// TestBuildCompleteFieldsChecked sends malformed build_complete lines over
// a raw connection: each is a bad_request naming the field, and the handler
// never runs.
func TestBuildCompleteFieldsChecked(t *testing.T) {
	var n atomic.Int32
	m := NewMux(Routes())
	m.Handle(TypeBuildComplete, counting(&n))
	sock := listen(t, m)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	build := ulid.Make().String()
	for _, tc := range []struct{ line, want string }{
		{`{"v":1,"type":"build_complete","manifest":"/m"}`, `missing field "build"`},
		{`{"v":1,"type":"build_complete","build":"nope","manifest":"/m"}`, `field "build": "nope" is not a ULID`},
		{`{"v":1,"type":"build_complete","build":"` + strings.ToLower(build) + `","manifest":"/m"}`, `field "build"`},
		{`{"v":1,"type":"build_complete","build":"` + build + `"}`, `missing field "manifest"`},
		{`{"v":1,"type":"build_complete","build":"` + build + `","manifest":"rel/m.toml"}`, `field "manifest": "rel/m.toml" is not an absolute`},
		{`{"v":1,"type":"build_complete","build":"` + build + `","manifest":"/a/../m.toml"}`, `not an absolute clean path`},
	} {
		c.Write([]byte(tc.line + "\n"))
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp notify.Response
		json.Unmarshal(line, &resp)
		if resp.Type != notify.TypeError || resp.Code != notify.CodeBadRequest || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("line %s: got %s, want bad_request containing %q", tc.line, line, tc.want)
		}
	}
	if n.Load() != 0 {
		t.Errorf("handler ran %d times for malformed requests", n.Load())
	}
	resp, err := send(t, sock, notify.Request{Type: TypeBuildComplete, Build: build, Manifest: "/src/app/.mcpepoch/manifest.toml"})
	if err != nil || resp.Type != TypeBuildComplete || n.Load() != 1 {
		t.Errorf("well-formed build_complete: %+v, %v", resp, err)
	}
}

// TestEveryRouteDeclaresWhoMaySend guards the table: every request type
// the API names is routed, once, with a permit.
func TestEveryRouteDeclaresWhoMaySend(t *testing.T) {
	want := []string{TypeBuildComplete, TypeBuildFailed, TypeRestart, TypeStatus, TypeReview, TypeApprove, TypeApproveWeb, TypeApproveWait, TypeProposeSSH, TypeApproveSSH, TypeRevoke, TypeGrants, TypeTrees}
	var got []string
	for _, r := range Routes() {
		if r.Permit == PermitNobody {
			t.Errorf("route %q declares no permit", r.Type)
		}
		got = append(got, r.Type)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
}

func TestMuxPanicsOnProgramErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"duplicate route":  func() { NewMux([]Route{{Type: "a"}, {Type: "a"}}) },
		"empty type":       func() { NewMux([]Route{{}}) },
		"handler no route": func() { NewMux(nil).Handle("a", counting(new(atomic.Int32))) },
		"second handler": func() {
			m := NewMux([]Route{{Type: "a"}})
			m.Handle("a", counting(new(atomic.Int32)))
			m.Handle("a", counting(new(atomic.Int32)))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		err  error
		want Outcome
	}{
		{"restarted", nil, OutcomeRestarted},
		{"unchanged", nil, OutcomeUnchanged},
		{"held", nil, OutcomeHeld},
		{"closed", nil, OutcomeClosed},
		{"status", nil, OutcomeError},
		{"restarted", errors.New("x"), OutcomeError},
		{notify.TypeError, &notify.RemoteError{Code: "restart_failed"}, OutcomeError},
	} {
		if got := OutcomeOf(notify.Response{Type: tc.typ}, tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%q, %v) = %q, want %q", tc.typ, tc.err, got, tc.want)
		}
	}
}
