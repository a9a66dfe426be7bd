package host_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// asker is a go-sdk client's elicitation side: it records every
// elicitation/create and notifications/elicitation/complete, and answers
// with answer.
type asker struct {
	mu       sync.Mutex
	asked    []*mcp.ElicitParams
	complete []string
	answer   func(*mcp.ElicitParams) *mcp.ElicitResult
	seen     chan *mcp.ElicitParams
}

func newAsker(answer func(*mcp.ElicitParams) *mcp.ElicitResult) *asker {
	return &asker{answer: answer, seen: make(chan *mcp.ElicitParams, 64)}
}

// options is the client's: elicitation capabilities form and, with url,
// url mode.
func (k *asker) options(url bool) *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	if url {
		caps.Elicitation = &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}
	}
	return &mcp.ClientOptions{Capabilities: caps,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			k.mu.Lock()
			k.asked = append(k.asked, r.Params)
			k.mu.Unlock()
			k.seen <- r.Params
			return k.answer(r.Params), nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			k.mu.Lock()
			k.complete = append(k.complete, r.Params.ElicitationID)
			k.mu.Unlock()
		},
	}
}

func (k *asker) counts() (asked, complete int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.asked), len(k.complete)
}

// next waits for the next elicitation.
func (k *asker) next(t testing.TB) *mcp.ElicitParams {
	t.Helper()
	select {
	case p := <-k.seen:
		return p
	case <-time.After(waitLong):
		t.Fatal("no elicitation/create reached the client")
	}
	return nil
}

func accept(*mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "accept"} }

// eConnect connects a go-sdk client with opts to the project's host in
// protocol version (empty: the client's default, 2026-07-28).
func eConnect(t testing.TB, p *project, opts *mcp.ClientOptions, version string, env ...string) *gSession {
	t.Helper()
	cmd := p.command(testenv.Mcpepoch(t), p.hostArgs(nil)...)
	cmd.Env = testenv.Environ(env...)
	return eConnectCmd(t, p, cmd, opts, version)
}

// eConnectCmd is eConnect with the host started by cmd.
func eConnectCmd(t testing.TB, p *project, cmd *exec.Cmd, opts *mcp.ClientOptions, version string) *gSession {
	t.Helper()
	s := &gSession{t: t, cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = s.stderr
	s.cs = connectGo(t, cmd, s.stderr, opts, version)
	t.Cleanup(s.close)
	waitFor(t, waitLong, "the host to report its agent run", func() bool { return listeningRe.MatchString(s.stderr.String()) })
	s.run = listeningRe.FindStringSubmatch(s.stderr.String())[1]
	s.list()
	p.ready(s.run)
	return s
}

// approveYes approves slow_write for run with mcpepoch approve --yes (the
// grants project counts same-user).
func approveYes(t *testing.T, p *project, run string) {
	t.Helper()
	if out, code := p.runCLI(nil, "approve", "--yes", "--run", run, "--tools", "slow_write", "--credential", gStaging); code != 0 {
		t.Fatalf("approve --yes: exit %d\n%s", code, out)
	}
}

// callAsync calls slow_write with key in the background.
func callAsync(s *gSession, ctx context.Context, key string) chan error {
	done := make(chan error, 1)
	go func() {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{"key": key}})
		if err == nil && (res.IsError || !strings.Contains(gText(res), "count=")) {
			err = fmt.Errorf("result %q", gText(res))
		}
		done <- err
	}()
	return done
}

func wantDone(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLong):
		t.Fatal("the held call did not end")
	}
	return nil
}

// wantHeldRefusal checks that err is authorization_required for a wait
// that ended with outcome.
func wantHeldRefusal(t *testing.T, err error, outcome string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != host.CodeAuthorizationRequired || !strings.HasPrefix(werr.Message, "authorization_required:") ||
		!strings.Contains(string(werr.Data), `"outcome":"`+outcome+`"`) {
		t.Fatalf("held call: %v, want authorization_required with outcome %s", err, outcome)
	}
}

// TestElicitURLTenCallsOneApproval: a client with url elicitation gets one
// elicitation/create for ten calls that need the same grant; the calls are
// held, another call passes meanwhile, and all ten reach the server once
// the grant lands (here from mcpepoch approve), followed by
// notifications/elicitation/complete; the audit log says who was asked,
// through which channel, and the answer.
func TestElicitURLTenCallsOneApproval(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	k := newAsker(accept)
	s := eConnect(t, p, k.options(true), "2025-11-25")
	var dones []chan error
	for i := range 10 {
		dones = append(dones, callAsync(s, t.Context(), fmt.Sprintf("k%d", i)))
	}
	e := k.next(t)
	if e.Mode != "url" || !strings.HasPrefix(e.URL, "http://localhost:") || e.ElicitationID == "" ||
		!strings.Contains(e.Message, "inventory-local") || !strings.Contains(e.Message, "slow_write") {
		t.Fatalf("elicitation: %+v", e)
	}
	// The run's first ask: no diff against nothing, which calls every
	// tool added.
	if strings.Contains(e.Message, "tool_added") || !strings.Contains(e.Message, "first approval") {
		t.Errorf("first elicitation of the run: %q", e.Message)
	}
	if got := s.text("version", nil); got == "" {
		t.Fatal("an exempt call while others wait: empty")
	}
	for i := range 10 {
		if c, _ := p.counts(fmt.Sprintf("k%d", i)); c != "" {
			t.Fatalf("k%d reached the server before the approval: %q", i, c)
		}
	}
	approveYes(t, p, s.run)
	for _, d := range dones {
		if err := wantDone(t, d); err != nil {
			t.Fatalf("held call after the approval: %v", err)
		}
	}
	waitFor(t, waitLong, "notifications/elicitation/complete", func() bool { _, c := k.counts(); return c == 1 })
	if a, _ := k.counts(); a != 1 {
		t.Fatalf("%d elicitations for ten calls, want 1", a)
	}
	recs := p.waitRecords("approval_wait_ended", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalWaitEnded)) == 1 })
	asked := filterType(recs, audit.TypeApprovalAsked)
	if len(asked) != 1 || asked[0].Fields["channel"] != "elicitation/url" || !strings.Contains(fmt.Sprint(asked[0].Fields["asked"]), "mcpepoch-host-test") {
		t.Fatalf("approval_asked: %v", asked)
	}
	if ans := filterType(recs, audit.TypeApprovalAnswered); len(ans) != 1 || ans[0].Fields["action"] != "accept" {
		t.Fatalf("approval_answered: %v", ans)
	}
	if end := filterType(recs, audit.TypeApprovalWaitEnded)[0]; end.Fields["outcome"] != "granted" {
		t.Fatalf("approval_wait_ended: %v", end.Fields)
	}
	if n := len(filterType(recs, audit.TypeToolCalled)); n < 10 {
		t.Fatalf("%d tool_called records, want the ten held calls", n)
	}
}

// TestElicitDeclineTimeoutCancelEpoch: a decline in the client, the end
// of grants.approval_wait, the client's cancellation and an epoch change
// each end a wait; the call never reaches the server.
func TestElicitDeclineTimeoutCancelEpoch(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"same-user\"]\napproval_wait = \"3s\"", 1))
	var mu sync.Mutex
	action := "decline"
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		mu.Lock()
		defer mu.Unlock()
		return &mcp.ElicitResult{Action: action}
	})
	s := eConnect(t, p, k.options(true), "2025-11-25")

	wantHeldRefusal(t, wantDone(t, callAsync(s, t.Context(), "d")), "declined")
	mu.Lock()
	action = "accept"
	mu.Unlock()
	wantHeldRefusal(t, wantDone(t, callAsync(s, t.Context(), "t")), "timeout")

	ctx, cancel := context.WithCancel(t.Context())
	done := callAsync(s, ctx, "c")
	k.next(t)
	k.next(t)
	k.next(t)
	cancel()
	if err := wantDone(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	p.waitRecords("the cancelled wait", func(rs []audit.Record) bool {
		for _, r := range filterType(rs, audit.TypeApprovalWaitEnded) {
			if r.Fields["outcome"] == "call_cancelled" {
				return true
			}
		}
		return false
	})

	done = callAsync(s, t.Context(), "e")
	k.next(t)
	p.cli("restart")
	wantHeldRefusal(t, wantDone(t, done), "epoch_changed")
	for _, key := range []string{"d", "t", "c", "e"} {
		if c, _ := p.counts(key); c != "" {
			t.Errorf("call %s reached the server: %q", key, c)
		}
	}
}

// TestElicitFormClientProof: a form-only client's accept is an approval
// of proof "client" where the proof list counts it; where it does not,
// the form names the approval page and an accept only keeps the call
// waiting.
func TestElicitFormClientProof(t *testing.T) {
	t.Parallel()
	t.Run("counts", func(t *testing.T) {
		t.Parallel()
		p := newGrantsProject(t, nil)
		p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"client\"]", 1))
		k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
		})
		s := eConnect(t, p, k.options(false), "2025-11-25")
		if err := wantDone(t, callAsync(s, t.Context(), "f")); err != nil {
			t.Fatalf("call approved in the form: %v", err)
		}
		if e := k.next(t); e.Mode == "url" || e.URL != "" || !strings.Contains(e.Message, "code ") {
			t.Fatalf("form elicitation: %+v", e)
		}
		gs := p.grants()
		if len(gs) != 1 || gs[0].Proof != approval.ProofClient || gs[0].Channel != "client" {
			t.Fatalf("grants: %+v, want one of proof client", gs)
		}
		if strings.Contains(s.stderr.String(), "approval pages on") {
			t.Errorf("the form approves, yet the host started the approval page server:\n%s", s.stderr.String())
		}
	})
	t.Run("does not count", func(t *testing.T) {
		t.Parallel()
		p := newGrantsProject(t, nil)
		p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"terminal\"]\napproval_wait = \"2s\"", 1))
		k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
		})
		s := eConnect(t, p, k.options(false), "2025-11-25")
		wantHeldRefusal(t, wantDone(t, callAsync(s, t.Context(), "f")), "timeout")
		if e := k.next(t); !strings.Contains(e.Message, "http://localhost:") || !strings.Contains(e.Message, "cannot approve") {
			t.Fatalf("form elicitation without client proof: %q, want the page's URL", e.Message)
		}
		if gs := p.grants(); len(gs) != 0 {
			t.Fatalf("grants after a form accept that does not count: %+v", gs)
		}
	})
}

// TestElicitInputRequired: in the 2026-07-28 era the go-sdk client gets
// an input_required result whose input request is the url elicitation,
// and retries with the answer; the retry is held until the grant lands.
func TestElicitInputRequired(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	k := newAsker(accept)
	s := eConnect(t, p, k.options(true), "")
	if v := negotiated(s.cs); v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	done := callAsync(s, t.Context(), "m")
	if e := k.next(t); e.Mode != "url" || e.ElicitationID == "" || !strings.HasPrefix(e.URL, "http://localhost:") {
		t.Fatalf("input request: %+v", e)
	}
	p.waitRecords("approval_answered", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalAnswered)) == 1 })
	if c, _ := p.counts("m"); c != "" {
		t.Fatalf("the call reached the server before the approval: %q", c)
	}
	approveYes(t, p, s.run)
	if err := wantDone(t, done); err != nil {
		t.Fatalf("held retry after the approval: %v", err)
	}
	recs := p.records()
	if a := filterType(recs, audit.TypeApprovalAsked); len(a) != 1 || a[0].Fields["channel"] != "input_required/url" {
		t.Fatalf("approval_asked: %v", a)
	}
}

// TestElicitInputRequiredForm: a form-only client in the 2026-07-28 era
// approves in the form where proof counts client: its retry carries the
// accept, which makes the grant and releases the retry.
func TestElicitInputRequiredForm(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"client\"]", 1))
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	s := eConnect(t, p, k.options(false), "")
	if err := wantDone(t, callAsync(s, t.Context(), "r")); err != nil {
		t.Fatalf("call approved in the form of an input request: %v", err)
	}
	if gs := p.grants(); len(gs) != 1 || gs[0].Proof != approval.ProofClient {
		t.Fatalf("grants: %+v, want one of proof client", gs)
	}
	if strings.Contains(s.stderr.String(), "approval pages on") {
		t.Errorf("the form approves, yet the host started the approval page server:\n%s", s.stderr.String())
	}
	if a := filterType(p.records(), audit.TypeApprovalAsked); len(a) != 1 || a[0].Fields["channel"] != "input_required/form" {
		t.Fatalf("approval_asked: %v", a)
	}
}

// TestElicitBothModesNothingEnrolled: under the default proof (terminal,
// client) with no authenticator enrolled, the approval page could only say
// that none is: a client declaring both modes is asked by form, whose
// accept is the approval.
func TestElicitBothModesNothingEnrolled(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]\n", "", 1))
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	opts := k.options(false)
	opts.Capabilities.Elicitation.URL = &mcp.URLElicitationCapabilities{}
	s := eConnect(t, p, opts, "2025-11-25")
	if err := wantDone(t, callAsync(s, t.Context(), "b")); err != nil {
		t.Fatalf("call approved in the form: %v", err)
	}
	if e := k.next(t); e.Mode == "url" || e.URL != "" {
		t.Fatalf("elicitation with nothing enrolled: %+v, want a form", e)
	}
	if gs := p.grants(); len(gs) != 1 || gs[0].Proof != approval.ProofClient {
		t.Fatalf("grants: %+v, want one of proof client", gs)
	}
}

// waitingLine is the line mcpepoch status prints for one call of
// slow_write held for an approval (its wait in whole seconds).
var waitingLine = regexp.MustCompile(`(?m)^  waiting:  1 call of slow_write held for an approval for [0-9]+s \(mcpepoch approve\)$`)

// TestStatusShowsCallsWaitingForApproval: a call held for an approval is
// in the host's status, JSON and text, with its tool and epoch, until the
// grant lands.
func TestStatusShowsCallsWaitingForApproval(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	k := newAsker(accept)
	s := eConnect(t, p, k.options(true), "2025-11-25")
	done := callAsync(s, t.Context(), "w")
	k.next(t)
	st := p.status()
	if len(st.WaitingApproval) != 1 || st.WaitingApproval[0].Tool != "slow_write" || st.WaitingApproval[0].Calls != 1 ||
		st.Execution == nil || st.WaitingApproval[0].Epoch != st.Execution.Epoch {
		t.Fatalf("status while a call waits: %+v", st.WaitingApproval)
	}
	text := p.cli("status", "--dir", p.dir).Stdout
	if !waitingLine.MatchString(text) {
		t.Fatalf("status while a call waits:\n%s\nwant the line %q", text, waitingLine)
	}
	approveYes(t, p, s.run)
	if err := wantDone(t, done); err != nil {
		t.Fatalf("held call after the approval: %v", err)
	}
	if st := p.status(); len(st.WaitingApproval) != 0 {
		t.Fatalf("status after the approval: %+v", st.WaitingApproval)
	}
	if text := p.cli("status", "--dir", p.dir).Stdout; strings.Contains(text, "waiting:") {
		t.Fatalf("status after the approval:\n%s", text)
	}
}
