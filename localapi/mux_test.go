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

	"github.com/mcpepoch/mcpepoch/approval"
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

// TestPermitPersonProvesTheSender: a PermitPerson route runs its proof
// check on the sender after the same-user check and hands the handler
// what it proved; without a proof check it refuses every sender, and a
// sender of another uid is refused before any check runs.
func TestPermitPersonProvesTheSender(t *testing.T) {
	var checks, served atomic.Int32
	var got approval.Proven
	m := NewMux([]Route{{Type: "approve", Permit: PermitPerson}, {Type: "unproven", Permit: PermitPerson}, {Type: "status", Permit: PermitSameUser}})
	m.Prove("approve", func(_ context.Context, peer notify.Peer, req notify.Request) approval.Proven {
		checks.Add(1)
		if peer.PID == 42 {
			return approval.Proven{Proof: approval.ProofTerminal, Channel: approval.ChannelTerminal}
		}
		return approval.Proven{Proof: approval.ProofSameUser, Channel: approval.ChannelScript, Why: "not pid 42"}
	})
	handler := func(ctx context.Context, _ notify.Peer, req notify.Request) notify.Response {
		served.Add(1)
		p, ok := ProvenFrom(ctx)
		if req.Type == "approve" && !ok {
			t.Errorf("%s: no proof in the handler's context", req.Type)
		}
		if req.Type == "status" && ok {
			t.Errorf("%s: a proof in a same-user route's context: %+v", req.Type, p)
		}
		got = p
		return notify.Response{Type: req.Type}
	}
	m.Handle("approve", handler)
	m.Handle("unproven", handler)
	m.Handle("status", handler)
	me := notify.Peer{UID: os.Geteuid(), PID: 42, Checked: true}
	if resp := m.Serve(context.Background(), me, notify.Request{V: 1, Type: "approve"}); resp.Type != "approve" || got.Proof != approval.ProofTerminal {
		t.Errorf("approve from pid 42: %+v, handler saw %+v", resp, got)
	}
	me.PID = 7
	if resp := m.Serve(context.Background(), me, notify.Request{V: 1, Type: "approve"}); resp.Type != "approve" || got.Proof != approval.ProofSameUser || got.Why != "not pid 42" {
		t.Errorf("approve from pid 7: %+v, handler saw %+v, want same-user, served", resp, got)
	}
	other := notify.Peer{UID: os.Geteuid() + 1, PID: 42, Checked: true}
	if resp := m.Serve(context.Background(), other, notify.Request{V: 1, Type: "approve"}); resp.Code != notify.CodeForbidden {
		t.Errorf("approve from another uid: %+v, want forbidden", resp)
	}
	if resp := m.Serve(context.Background(), me, notify.Request{V: 1, Type: "unproven"}); resp.Code != notify.CodeForbidden || !strings.Contains(resp.Error, "no proof check") {
		t.Errorf("a person route without a proof check: %+v, want forbidden", resp)
	}
	m.Serve(context.Background(), me, notify.Request{V: 1, Type: "status"})
	if checks.Load() != 2 || served.Load() != 3 {
		t.Errorf("proof checks %d, handler calls %d; want 2, 3", checks.Load(), served.Load())
	}
}

// TestApproveNeedsAPersonCheck guards the table's real rule: approve is
// the one route whose sender the Mux proves; revoke only narrows access
// and stays same-user (Routes says why).
func TestApproveNeedsAPersonCheck(t *testing.T) {
	for _, r := range Routes() {
		want := PermitSameUser
		if r.Type == TypeApprove {
			want = PermitPerson
		}
		if r.Permit != want {
			t.Errorf("route %q: permit %s, want %s", r.Type, r.Permit, want)
		}
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
		"proof of a same-user route": func() {
			NewMux([]Route{{Type: "a", Permit: PermitSameUser}}).Prove("a", nil)
		},
		"proof without route": func() { NewMux(nil).Prove("a", nil) },
		"second proof": func() {
			m := NewMux([]Route{{Type: "a", Permit: PermitPerson}})
			m.Prove("a", nil)
			m.Prove("a", nil)
		},
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
