package host_test

// End-to-end tests of grants bound to the execution epoch (seed:
// "authorization follows the execution epoch"): a real go-sdk client runs
// the mcpepoch binary as its server, the host runs the fixture server
// through server.sh, and approvals, rebuilds and restarts are real
// mcpepoch CLI processes. The policy is host/testdata/grants/mcpepoch.toml.
//
// Test code shared with audit_e2e_test.go has names starting with g.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Credential scopes of host/testdata/grants/mcpepoch.toml.
const (
	gStaging  = "inventory-api-staging" // slow_write
	gPayments = "payments"              // publish_preview, per call
)

// newGrantsProject is a project (helpers_test.go) whose mcpepoch.toml is
// host/testdata/grants/mcpepoch.toml, so that tools need grants, and
// whose server.sh exports FIXTURE_COUNTER_DIR (counter/, what slow_write
// reached) and env.
func newGrantsProject(t testing.TB, env map[string]string) *project {
	t.Helper()
	p := newProject(t, nil)
	toml, err := os.ReadFile(filepath.Join("testdata", "grants", "mcpepoch.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p.write("mcpepoch.toml", string(toml))
	p.serverWithCounter(env)
	return p
}

// serverWithCounter rewrites server.sh, as a build would: the exports of
// env and FIXTURE_COUNTER_DIR in name order, then exec ./bin/fixture.
func (p *project) serverWithCounter(env map[string]string) {
	p.t.Helper()
	all := map[string]string{"FIXTURE_COUNTER_DIR": p.counter}
	maps.Copy(all, env)
	p.server("", all)
}

// runCLI runs mcpepoch args… in the project with env added to the test's
// environment and returns its output and exit status.
func (p *project) runCLI(env []string, args ...string) (testenv.Output, int) {
	p.t.Helper()
	return testenv.Run(p.t, p.dir, env, testenv.Mcpepoch(p.t), args...)
}

// hosts returns mcpepoch status --json: empty when no host is listening
// (status then exits 3).
func (p *project) hosts() []host.Status {
	p.t.Helper()
	out, code := p.runCLI(nil, "status", "--json")
	if code != 0 && code != 3 {
		p.t.Fatalf("status --json: exit %d\n%s", code, out)
	}
	var all []host.Status
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil {
		p.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return all
}

// statusOf returns the status of the host serving agent run.
func (p *project) statusOf(run string) host.Status {
	p.t.Helper()
	all := p.hosts()
	for _, s := range all {
		if string(s.AgentRun) == run {
			return s
		}
	}
	p.t.Fatalf("status --json: no host serves agent run %s: %+v", run, all)
	return host.Status{}
}

// ready polls the status of run until it is ready with a known catalog:
// what a person needs before approving.
func (p *project) ready(run string) host.Status {
	p.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s := p.statusOf(run)
		if s.State == host.StateReady && s.Catalog != "" && s.Execution != nil {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("host of run %s: state %s, catalog %q after %s", run, s.State, s.Catalog, waitLong)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// epoch returns the running epoch and pid of run's host.
func (p *project) epoch(run string) (epoch.Epoch, int) {
	p.t.Helper()
	s := p.ready(run)
	return s.Execution.Epoch, s.Execution.ProcessID
}

// approveRe matches the line mcpepoch approve prints on stdout.
var approveRe = regexp.MustCompile(`approved: grant (\S+) for agent run (\S+), epoch (\S+):`)

// reviewRe matches the first line of the review screen.
var reviewRe = regexp.MustCompile(`(?m)^agent run \S+ · server \S+ · epoch (\S+) \(pid`)

// tryApprove runs mcpepoch approve --yes --run run args….
func (p *project) tryApprove(run string, args ...string) (testenv.Output, int) {
	p.t.Helper()
	return p.runCLI(nil, append([]string{"approve", "--yes", "--run", run}, args...)...)
}

// approve approves for run and returns the new grant's id and epoch.
func (p *project) approve(run string, args ...string) (id string, ep epoch.Epoch, out testenv.Output) {
	p.t.Helper()
	out, code := p.tryApprove(run, args...)
	m := approveRe.FindStringSubmatch(out.Stdout)
	if code != 0 || m == nil {
		p.t.Fatalf("mcpepoch approve %v: exit %d\n%s", args, code, out)
	}
	if m[2] != run {
		p.t.Fatalf("approve --run %s approved for run %s", run, m[2])
	}
	return m[1], epoch.Epoch(m[3]), out
}

// grants returns mcpepoch grants --json.
func (p *project) grants() []grant.Grant {
	p.t.Helper()
	out := p.cli("grants", "--json")
	var gs []grant.Grant
	if err := json.Unmarshal([]byte(out.Stdout), &gs); err != nil {
		p.t.Fatalf("grants --json: %v\n%s", err, out)
	}
	return gs
}

// grant returns the grant with id from mcpepoch grants --json.
func (p *project) grant(id string) grant.Grant {
	p.t.Helper()
	gs := p.grants()
	for _, g := range gs {
		if string(g.ID) == id {
			return g
		}
	}
	p.t.Fatalf("grants --json has no grant %s: %+v", id, gs)
	return grant.Grant{}
}

// records returns mcpepoch audit show --json args….
func (p *project) records(args ...string) []audit.Record {
	p.t.Helper()
	out := p.cli(append([]string{"audit", "show", "--json"}, args...)...)
	return parseAuditRecords(p.t, out.Stdout)
}

// waitRecords polls mcpepoch audit show --json until cond holds: the host
// writes records asynchronously.
func (p *project) waitRecords(what string, cond func([]audit.Record) bool) []audit.Record {
	p.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		recs := p.records()
		if cond(recs) {
			return recs
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("audit log: no %s after %s; records:\n%s", what, waitLong, gFormat(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gFormat renders records as the timeline, for failure messages.
func gFormat(recs []audit.Record) string {
	var b bytes.Buffer
	audit.FormatTimeline(&b, recs)
	return b.String()
}

// verify runs mcpepoch audit verify args… and returns its output and
// exit status.
func (p *project) verify(args ...string) (testenv.Output, int) {
	p.t.Helper()
	return p.runCLI(nil, append([]string{"audit", "verify"}, args...)...)
}

// counts returns the content of counter/<key>.count and counter/<key>.started
// ("" when missing): what reached the server.
func (p *project) counts(key string) (count, started string) {
	p.t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(p.counter, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			p.t.Fatal(err)
		}
		return string(b)
	}
	return read(key + ".count"), read(key + ".started")
}

// gSession is a go-sdk client connected to mcpepoch host for a project.
type gSession struct {
	t      testing.TB
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *testenv.Buffer
	run    string // the host's agent run
	killed bool   // the test killed the host
	closed bool
}

// gConnect starts "mcpepoch host -- sh ./server.sh" in the project as the
// server of a go-sdk client, with env added to the host's environment. The
// session is closed, and the host killed if it is still running, in
// t.Cleanup.
func gConnect(t *testing.T, p *project, env ...string) *gSession {
	t.Helper()
	cmd := p.command(testenv.Mcpepoch(t), p.hostArgs(nil)...)
	cmd.Env = testenv.Environ(env...)
	s := &gSession{t: t, cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = s.stderr
	s.cs = connectGo(t, cmd, s.stderr, nil, "")
	t.Cleanup(s.close) // before connectGo's cleanup, which kills a host still running
	waitFor(t, waitLong, "the host to report its agent run", func() bool { return listeningRe.MatchString(s.stderr.String()) })
	s.run = listeningRe.FindStringSubmatch(s.stderr.String())[1]
	return s
}

// close ends the session: the client closes the host's stdin and waits
// for it to exit (SIGTERM after 10 s); the host stops its server, revokes
// the run's grants and writes what is left of the audit log before it
// exits. A host that does not exit cleanly fails the test, unless the test
// killed it.
func (s *gSession) close() {
	if s.closed {
		return
	}
	s.closed = true
	if err := closeGo(s.t, s.cs, s.cmd); err != nil && !s.killed {
		s.t.Errorf("host of run %s did not exit cleanly when its client closed: %v", s.run, err)
	}
}

// gGone reports whether pid no longer runs (reaped, or a zombie nobody
// waits for any more).
func gGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)) // Linux: a zombie counts as gone
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// call sends tools/call and returns the result or the error.
func (s *gSession) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// text calls a tool that must succeed and returns its text.
func (s *gSession) text(name string, args map[string]any) string {
	s.t.Helper()
	res, err := s.call(name, args)
	if err != nil {
		s.t.Fatalf("call %s %v: %v", name, args, err)
	}
	if res.IsError || len(res.Content) == 0 {
		s.t.Fatalf("call %s %v: tool error or empty result: %s", name, args, gText(res))
	}
	return gText(res)
}

// gText returns the text of a result's text blocks.
func gText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rpcError calls a tool that must fail with a JSON-RPC error of code and a
// message starting with prefix; it returns the error's data.
func (s *gSession) rpcError(name string, args map[string]any, code int64, prefix string) map[string]any {
	s.t.Helper()
	res, err := s.call(name, args)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		var got string
		if res != nil {
			got = gText(res)
		}
		s.t.Fatalf("call %s %v: result %q, error %v; want JSON-RPC error %d %s", name, args, got, err, code, prefix)
	}
	if werr.Code != code || !strings.HasPrefix(werr.Message, prefix) {
		s.t.Fatalf("call %s: error %d %q, want %d starting %q", name, werr.Code, werr.Message, code, prefix)
	}
	var data map[string]any
	if err := json.Unmarshal(werr.Data, &data); err != nil {
		s.t.Fatalf("call %s: error data %s: %v", name, werr.Data, err)
	}
	return data
}

// refusal calls a tool whose arguments the host must refuse as not
// matching its inputSchema: a tool result with isError true (MCP
// 2025-11-25), its text starting "invalid_arguments:". It returns the
// result's _meta[host.MetaRefusal].
func (s *gSession) refusal(name string, args map[string]any) map[string]any {
	s.t.Helper()
	res, err := s.call(name, args)
	if err != nil || !res.IsError || !strings.HasPrefix(gText(res), "invalid_arguments:") {
		var got string
		if res != nil {
			got = gText(res)
		}
		s.t.Fatalf("call %s %v: result %q, error %v; want an isError result invalid_arguments", name, args, got, err)
	}
	data, _ := res.Meta[host.MetaRefusal].(map[string]any)
	if data["reason"] != "invalid_arguments" {
		s.t.Fatalf("call %s: _meta %v, want the refusal's reason and details", name, res.Meta)
	}
	return data
}

// list lists the tools and returns their names.
func (s *gSession) list() []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		s.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// wantData checks members of an error's data.
func wantData(t *testing.T, data map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if fmt.Sprint(data[k]) != fmt.Sprint(v) {
			t.Errorf("error data %s = %v, want %v (data %v)", k, data[k], v, data)
		}
	}
}

// TestGrantSeedRebuild is the seed's rebuild scenario: a write tool
// approved for one execution epoch is refused as authorization_stale after
// a rebuild, without reaching the new server, until a person approves it
// again for the new epoch.
func TestGrantSeedRebuild(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	s := gConnect(t, p)

	if names := s.list(); !slices.Equal(slices.Sorted(slices.Values(names)), []string{"publish_preview", "slow_write", "version"}) {
		t.Fatalf("tools %v", names)
	}
	epA, pidA := p.epoch(s.run)

	// version is exempt: no grant needed.
	if got := s.text("version", nil); got != "revision=A" {
		t.Fatalf("version: %q", got)
	}

	// 1. The write tool needs a grant.
	args := map[string]any{"key": "seed", "delayMs": 0}
	data := s.rpcError("slow_write", args, host.CodeAuthorizationRequired, "authorization_required:")
	wantData(t, data, map[string]any{"error": "authorization_required", "tool": "slow_write",
		"currentEpoch": epA, "credentialScope": []any{gStaging}, "perCall": false})
	if a, _ := data["action"].(string); a != "a person must run mcpepoch approve in their own terminal" {
		t.Errorf("error data action = %q: want what a person should do", a)
	}
	if _, ok := data["approve"]; ok || strings.Contains(fmt.Sprint(data), "--yes") {
		t.Errorf("error data %v: names a command that approves the call", data)
	}
	if c, st := p.counts("seed"); c != "" || st != "" {
		t.Fatalf("a refused call reached the server: count %q, started %q", c, st)
	}
	gid, gep, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if gep != epA {
		t.Fatalf("approved for epoch %s, running %s", gep, epA)
	}

	// 2. The approved call runs; the grant names epoch A.
	if got := s.text("slow_write", args); got != "count=1 revision=A" {
		t.Fatalf("slow_write after approval: %q", got)
	}
	g := p.grant(gid)
	if g.ExecutionEpoch != epA || string(g.AgentRun) != s.run || !slices.Equal(g.ToolScope, []string{"slow_write"}) ||
		!slices.Equal(g.CredentialScope, []string{gStaging}) || g.ExpiresWhen != grant.ExpiresRunEnds ||
		g.RevokedAt != nil || g.ServerLabel != "inventory-local" || g.ApprovedBy == "" {
		t.Fatalf("grant after approval: %+v", g)
	}

	// 3. Rebuild to revision B, with a new required field.
	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B", "FIXTURE_REQUIRED_FIELD": "reason"})
	rec := p.cli("record")
	if !strings.Contains(rec.Stderr, "1 grant revoked") {
		t.Fatalf("mcpepoch record does not say the grant was revoked:\n%s", rec)
	}

	// 4. The host replaced the process.
	epB, pidB := p.epoch(s.run)
	if epB == epA || pidB == pidA {
		t.Fatalf("after the rebuild: epoch %s pid %d, before epoch %s pid %d", epB, pidB, epA, pidA)
	}
	if g := p.grant(gid); g.RevokedAt == nil || g.RevokedReason != grant.RevokedEpochChanged {
		t.Fatalf("grant of epoch A after the rebuild: revoked %v reason %q", g.RevokedAt, g.RevokedReason)
	}

	// 5. The call prepared under A is refused as stale, and reaches nothing.
	count, started := p.counts("seed")
	data = s.rpcError("slow_write", args, host.CodeAuthorizationStale, "authorization_stale:")
	wantData(t, data, map[string]any{
		"error": "authorization_stale", "reason": "server execution epoch changed",
		"approvedEpoch": epA, "currentEpoch": epB,
		"retry": "refresh tool metadata and request authorization", "catalogChanged": true, "tool": "slow_write",
	})
	if c, st := p.counts("seed"); c != count || st != started {
		t.Fatalf("the stale call reached the server: count %q → %q, started %q → %q", count, c, started, st)
	}

	// 6. Re-list, approve for B, call again.
	s.list()
	_, gep, _ = p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if gep != epB {
		t.Fatalf("second approval for epoch %s, running %s", gep, epB)
	}
	if got := s.text("slow_write", args); got != "count=2 revision=B" {
		t.Fatalf("slow_write on B: %q", got)
	}
	// The new required field is on publish_preview, whose payments scope
	// needs an approval per call. A call without the field is refused by the
	// catalog check (the client re-listed, so: invalid_arguments) and does
	// not spend that approval.
	p.approve(s.run, "--tools", "publish_preview", "--credential", gPayments, "--expires", "per-call")
	s.refusal("publish_preview", map[string]any{"branch": "main"})
	if got := s.text("publish_preview", map[string]any{"branch": "main", "reason": "seed"}); got != "publish_preview branch=main target=preview reason=seed revision=B" {
		t.Fatalf("publish_preview on B: %q", got)
	}
	s.rpcError("publish_preview", map[string]any{"branch": "main", "reason": "again"}, host.CodeAuthorizationRequired, "authorization_required:")
}

// TestGrantIdenticalBytesRestart: a new process is a new epoch, even for
// identical bytes, so a restart drops the grant; a build signal that finds
// nothing changed restarts nothing and keeps it.
func TestGrantIdenticalBytesRestart(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	s := gConnect(t, p)
	s.list()
	epA, pidA := p.epoch(s.run)
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	args := map[string]any{"key": "same"}
	if got := s.text("slow_write", args); got != "count=1 revision=A" {
		t.Fatalf("slow_write: %q", got)
	}

	// Touched but unchanged: the build hook finds nothing new.
	now := time.Now().Add(time.Second)
	if err := os.Chtimes(filepath.Join(p.dir, "server.sh"), now, now); err != nil {
		t.Fatal(err)
	}
	out := p.cli("record")
	if !strings.Contains(out.Stderr, "running server unchanged") {
		t.Fatalf("record after touching server.sh:\n%s", out)
	}
	if ep, pid := p.epoch(s.run); ep != epA || pid != pidA {
		t.Fatalf("record with identical bytes replaced the server: epoch %s pid %d", ep, pid)
	}
	if got := s.text("slow_write", args); got != "count=2 revision=A" {
		t.Fatalf("slow_write after an unchanged build: %q", got)
	}

	// mcpepoch restart launches the same bytes under a new epoch.
	p.cli("restart")
	epB, pidB := p.epoch(s.run)
	if epB == epA || pidB == pidA {
		t.Fatalf("restart kept epoch %s pid %d", epB, pidB)
	}
	if g := p.grant(gid); g.RevokedReason != grant.RevokedEpochChanged {
		t.Fatalf("grant after restarting identical bytes: revoked %v reason %q", g.RevokedAt, g.RevokedReason)
	}
	_, started := p.counts("same")
	data := s.rpcError("slow_write", args, host.CodeAuthorizationStale, "authorization_stale:")
	wantData(t, data, map[string]any{"approvedEpoch": epA, "currentEpoch": epB, "catalogChanged": false})
	if _, st := p.counts("same"); st != started {
		t.Fatal("the stale call reached the server")
	}
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if got := s.text("slow_write", args); got != "count=3 revision=A" {
		t.Fatalf("slow_write approved again after the restart: %q (want the third call to reach a server)", got)
	}
	recs := p.waitRecords("server_replaced record", func(rs []audit.Record) bool {
		return len(audit.Select(rs, audit.Filter{Type: audit.TypeServerReplaced})) == 1
	})
	r := audit.Select(recs, audit.Filter{Type: audit.TypeServerReplaced})[0]
	if reason, _ := r.Fields["reason"].(string); r.Epoch != string(epB) || !strings.Contains(reason, "identical bytes") {
		t.Errorf("server_replaced record: epoch %s reason %q", r.Epoch, reason)
	}
}

// TestGrantScope: a grant covers the tools it names with the credential
// scopes it names, nothing else.
func TestGrantScope(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)

	// An approval must name every credential scope its tools use.
	out, code := p.tryApprove(s.run, "--tools", "slow_write")
	if code != 4 || !strings.Contains(out.Stderr, gStaging) {
		t.Fatalf("approve slow_write without its credential scope: exit %d\n%s", code, out)
	}
	out, code = p.tryApprove(s.run, "--tools", "delete_everything", "--credential", gStaging)
	if code != 4 || !strings.Contains(out.Stderr, "not in the current catalog") {
		t.Fatalf("approve a tool the catalog lacks: exit %d\n%s", code, out)
	}
	if gs := p.grants(); len(gs) != 0 {
		t.Fatalf("refused approvals left grants: %+v", gs)
	}

	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", map[string]any{"key": "scope"})
	// publish_preview is outside the grant, and so is a tool the catalog
	// lacks.
	data := s.rpcError("publish_preview", map[string]any{"branch": "main"}, host.CodeAuthorizationRequired, "authorization_required:")
	wantData(t, data, map[string]any{"tool": "publish_preview", "credentialScope": []any{gPayments}, "perCall": true})
	// A tool the catalog lacks could never be granted: the catalog answers.
	s.rpcError("delete_everything", nil, host.CodeUnknownTool, "unknown_tool:")

	// An approval naming the payments scope, but not per call, could never
	// cover publish_preview: it is refused, and the call still is.
	out, code = p.tryApprove(s.run, "--tools", "publish_preview", "--credential", gPayments)
	if code != 4 || !strings.Contains(out.Stderr, "--expires per-call") {
		t.Fatalf("approve a per-call tool for the whole run: exit %d\n%s", code, out)
	}
	s.rpcError("publish_preview", map[string]any{"branch": "main"}, host.CodeAuthorizationRequired, "authorization_required:")
	// The exempt tool needs nothing.
	if got := s.text("version", nil); got != "revision=A" {
		t.Fatalf("version: %q", got)
	}
}

// TestGrantPerCall: a per-call credential scope needs a decision for each
// call.
func TestGrantPerCall(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	gid, _, _ := p.approve(s.run, "--tools", "publish_preview", "--credential", gPayments, "--expires", "per-call")
	if got := s.text("publish_preview", map[string]any{"branch": "one"}); got != "publish_preview branch=one target=preview revision=A" {
		t.Fatalf("first call: %q", got)
	}
	data := s.rpcError("publish_preview", map[string]any{"branch": "two"}, host.CodeAuthorizationRequired, "authorization_required:")
	wantData(t, data, map[string]any{"perCall": true, "reason": "credential scope requires an approval for each call"})
	if g := p.grant(gid); g.RevokedReason != grant.RevokedUsed || g.ExpiresWhen != grant.ExpiresPerCall {
		t.Fatalf("per-call grant after its call: expires %q revoked %v reason %q", g.ExpiresWhen, g.RevokedAt, g.RevokedReason)
	}
	p.approve(s.run, "--tools", "publish_preview", "--credential", gPayments, "--expires", "per-call")
	if got := s.text("publish_preview", map[string]any{"branch": "three"}); !strings.Contains(got, "branch=three") {
		t.Fatalf("call after a second approval: %q", got)
	}
}

// TestGrantRestartRacingApproval runs mcpepoch restart, mcpepoch approve
// and tool calls at once, many times, and checks with the audit log and
// the server's own record that every call that reached a server was made
// under a grant for the epoch that executed it.
func TestGrantRestartRacingApproval(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)

	const rounds = 30
	var (
		mu                                        sync.Mutex
		ok, refused, aborted, approved, notApprov int
		other                                     []string
	)
	for i := range rounds {
		var wg, cli sync.WaitGroup
		jitter := func() { time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) }
		// Every third round the approval starts once the restart has
		// ended, so that some calls are made under a grant however the
		// machine's load orders the other rounds' commands (an approval
		// takes longer than a restart: under load it lost every race).
		restarted := make(chan struct{})
		cli.Add(2)
		wg.Go(func() {
			defer cli.Done()
			defer close(restarted)
			jitter()
			if _, code := p.runCLI(nil, "restart"); code != 0 {
				t.Errorf("round %d: mcpepoch restart: exit %d", i, code)
			}
		})
		wg.Go(func() {
			defer cli.Done()
			if i%3 == 1 {
				<-restarted
			}
			jitter()
			out, code := p.tryApprove(s.run, "--tools", "slow_write", "--credential", gStaging)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case code == 0:
				approved++
				// The grant is for the epoch the person was shown.
				shown := reviewRe.FindStringSubmatch(out.Stdout)
				got := approveRe.FindStringSubmatch(out.Stdout)
				if shown == nil || got == nil || shown[1] != got[3] {
					other = append(other, fmt.Sprintf("round %d: approve showed one epoch and granted another:\n%s", i, out))
				}
			case code == 4 && strings.Contains(out.Stderr, "approval_refused"):
				notApprov++
			default:
				other = append(other, fmt.Sprintf("round %d: approve: exit %d: %s", i, code, out))
			}
		})
		// Calls go on until both commands have ended, and one more after:
		// on a loaded machine a command takes longer than four calls, and
		// a round whose approval outlives its restart is one where calls
		// succeed.
		cliDone := make(chan struct{})
		go func() { cli.Wait(); close(cliDone) }()
		wg.Go(func() {
			for n, last := 0, false; n < 4 || !last; n++ {
				select {
				case <-cliDone:
					last = true
				default:
				}
				jitter()
				res, err := s.call("slow_write", map[string]any{"key": "race", "delayMs": rand.IntN(30)})
				var werr *jsonrpc.Error
				mu.Lock()
				switch {
				case err == nil && !res.IsError:
					ok++
				case errors.As(err, &werr) && (werr.Code == host.CodeAuthorizationRequired || werr.Code == host.CodeAuthorizationStale):
					refused++
				case errors.As(err, &werr) && werr.Code == host.CodeServerRestarted:
					aborted++
				default:
					other = append(other, fmt.Sprintf("round %d: call: result %v error %v", i, res, err))
				}
				mu.Unlock()
			}
		})
		wg.Wait()
	}
	t.Logf("%d rounds: calls ok %d, refused %d, aborted %d; approvals %d, refused %d", rounds, ok, refused, aborted, approved, notApprov)
	for _, o := range other {
		t.Error(o)
	}
	if ok == 0 || refused == 0 {
		t.Fatalf("the race never produced both outcomes (ok %d, refused %d): the test checks nothing", ok, refused)
	}

	s.close() // the host writes what is queued before it exits
	grants := map[string]grant.Grant{}
	for _, g := range p.grants() {
		grants[string(g.ID)] = g
	}
	recs := p.records("--run", s.run)
	pidOf := map[string]string{} // epoch → pid of its server
	calledIn := map[string]int{} // epoch → tool_called records
	for _, r := range recs {
		switch r.Type {
		case audit.TypeServerStarted:
			pidOf[r.Epoch], _ = r.Fields["pid"].(string)
		case audit.TypeToolCalled:
			id, _ := r.Fields["grant"].(string)
			g, found := grants[id]
			switch {
			case !found:
				t.Errorf("seq %d: tool_called in epoch %s without a known grant (grant %q)", r.Seq, r.Epoch, id)
			case string(g.ExecutionEpoch) != r.Epoch:
				t.Errorf("seq %d: tool_called in epoch %s under grant %s of epoch %s", r.Seq, r.Epoch, id, g.ExecutionEpoch)
			}
			calledIn[r.Epoch]++
		}
	}
	if n := len(calledIn); n == 0 {
		t.Fatal("no tool_called record")
	}
	calls := 0
	for _, n := range calledIn {
		calls += n
	}
	if calls < ok {
		t.Errorf("%d calls succeeded but only %d tool_called records", ok, calls)
	}
	// What the servers themselves saw: every call that started in a server
	// process belongs to an epoch whose tool_called records account for it.
	// (A forwarded call may also never start: its server was stopped first
	// and the client got server_restarted.)
	_, started := p.counts("race")
	startedBy := map[string]int{}
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(started), "\n") {
		pid, _, _ := strings.Cut(strings.TrimPrefix(line, "pid="), " ")
		startedBy[pid]++
		total++
	}
	if total < ok {
		t.Errorf("%d calls succeeded but servers started only %d", ok, total)
	}
	for ep, n := range calledIn {
		if startedBy[pidOf[ep]] > n {
			t.Errorf("epoch %s (pid %s): %d tool_called records, but %d calls started in its server", ep, pidOf[ep], n, startedBy[pidOf[ep]])
		}
		delete(startedBy, pidOf[ep])
	}
	for pid, n := range startedBy {
		t.Errorf("pid %s started %d calls that no tool_called record accounts for", pid, n)
	}
}

// TestApproveAll: --all covers exactly the current catalog, with the
// credential scopes its tools use.
func TestApproveAll(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "echo_extra"})
	s := gConnect(t, p)
	names := s.list()
	st := p.ready(s.run)
	if !slices.Equal(names, st.Tools) {
		t.Fatalf("client listed %v, host catalog %v", names, st.Tools)
	}
	gid, _, _ := p.approve(s.run, "--all")
	g := p.grant(gid)
	if !slices.Equal(slices.Sorted(slices.Values(g.ToolScope)), slices.Sorted(slices.Values(st.Tools))) {
		t.Errorf("--all grant tools %v, catalog %v", g.ToolScope, st.Tools)
	}
	if !slices.Equal(g.CredentialScope, []string{gStaging, gPayments}) {
		t.Errorf("--all grant credential scope %v, want [%s %s]", g.CredentialScope, gStaging, gPayments)
	}
	if g.CatalogRevision != string(st.Catalog) {
		t.Errorf("grant catalog revision %s, reviewed %s", g.CatalogRevision, st.Catalog)
	}
	s.text("slow_write", map[string]any{"key": "all"})
	if got := s.text("echo_extra", map[string]any{"a": 1}); !strings.HasPrefix(got, "echo_extra args=") {
		t.Fatalf("echo_extra: %q", got)
	}
	// Not a tool outside the catalog, and not a per-call scope.
	s.rpcError("not_listed", nil, host.CodeUnknownTool, "unknown_tool:")
	s.rpcError("publish_preview", map[string]any{"branch": "main"}, host.CodeAuthorizationRequired, "authorization_required:")
}

// TestApproveReviewShowsDefaultChange: the review screen compares with what
// the person last approved: the changed entry and the seed's schema default
// target: preview → production.
func TestApproveReviewShowsDefaultChange(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_TARGET_DEFAULT": "preview"})
	s := gConnect(t, p)
	s.list()
	epA, _ := p.epoch(s.run)
	_, _, first := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if !strings.Contains(first.Stdout, "no earlier approval") || strings.Contains(first.Stdout, "default_changed") {
		t.Fatalf("first review:\n%s", first.Stdout)
	}

	p.serverWithCounter(map[string]string{"FIXTURE_TARGET_DEFAULT": "production"})
	p.cli("record")
	epB, _ := p.epoch(s.run)
	_, _, out := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	screen := out.Stdout
	for _, want := range []string{
		"epoch " + string(epB),
		"compared with the last approved epoch " + string(epA),
		`publish_preview: default_changed: target: "preview" → "production"`,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("review screen lacks %q:\n%s", want, screen)
		}
	}
	entry := ""
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "server.sh") {
			entry = l
		}
	}
	if !strings.Contains(entry, "CHANGED (was sha256:") {
		t.Errorf("review screen does not mark server.sh CHANGED:\n%s", screen)
	}
	if strings.Count(screen, "CHANGED") != 1 {
		t.Errorf("review screen marks more than the entry CHANGED:\n%s", screen)
	}

	// Approving again without a change shows none.
	_, _, again := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if !strings.Contains(again.Stdout, "no change since the last approval") || strings.Contains(again.Stdout, "CHANGED") {
		t.Errorf("review after approving the same epoch:\n%s", again.Stdout)
	}
}

// TestApproveStaleReviewRefused: an approval names the epoch the person
// reviewed; once a restart has replaced it, the host refuses the approval
// rather than grant the new epoch what nobody reviewed. The review and the
// approval are sent on the host's socket as mcpepoch approve sends them,
// with a restart in between.
func TestApproveStaleReviewRefused(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	epA, _ := p.epoch(s.run)
	dir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, s.run+notify.SocketSuffix)
	send := func(typ string, payload any) (notify.Response, error) {
		b, _ := json.Marshal(payload)
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		return notify.Send(ctx, sock, notify.Request{Type: typ, Payload: b})
	}
	resp, err := send(localapi.TypeReview, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rv host.Review
	if err := json.Unmarshal(resp.Payload, &rv); err != nil || rv.Epoch != epA {
		t.Fatalf("review: epoch %s (%v), running %s", rv.Epoch, err, epA)
	}

	p.cli("restart")
	epB, _ := p.epoch(s.run)
	req := host.ApproveRequest{Epoch: rv.Epoch, Tools: []string{"slow_write"}, Credentials: []string{gStaging}}
	_, err = send(localapi.TypeApprove, req)
	var re *notify.RemoteError
	if !errors.As(err, &re) || re.Code != "approval_refused" || !strings.Contains(re.Message, "epoch changed since the review") {
		t.Fatalf("approval of a review of the replaced epoch: %v", err)
	}
	if gs := p.grants(); len(gs) != 0 {
		t.Fatalf("refused approval left grants: %+v", gs)
	}
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")

	req.Epoch = epB
	resp, err = send(localapi.TypeApprove, req)
	if err != nil {
		t.Fatalf("approval of the running epoch: %v", err)
	}
	var g grant.Grant
	if err := json.Unmarshal(resp.Payload, &g); err != nil || g.ExecutionEpoch != epB {
		t.Fatalf("grant %+v (%v), want epoch %s", g, err, epB)
	}
	s.text("slow_write", map[string]any{"key": "k"})
}

// TestGrantEndsWithCrashedEpoch: a server that exits on its own ends its
// epoch; the host's restart under a new epoch revokes that epoch's grants
// (the next call is stale and names the crashed epoch) and the audit log
// records the replacement.
func TestGrantEndsWithCrashedEpoch(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	id, epA, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", map[string]any{"key": "crash"})

	_, pid := p.epoch(s.run)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var epB epoch.Epoch
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := p.statusOf(s.run)
		if st.State == host.StateReady && st.Execution != nil && st.Execution.Epoch != epA {
			epB = st.Execution.Epoch
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new epoch after the server was killed: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g := p.grant(id); g.RevokedAt == nil || g.RevokedReason != grant.RevokedEpochChanged {
		t.Fatalf("grant of the crashed epoch: revoked %v reason %q, want epoch_changed", g.RevokedAt, g.RevokedReason)
	}
	data := s.rpcError("slow_write", map[string]any{"key": "crash"}, host.CodeAuthorizationStale, "authorization_stale:")
	wantData(t, data, map[string]any{"approvedEpoch": string(epA), "currentEpoch": string(epB)})
	p.waitRecords("server_replaced from the crashed epoch", func(recs []audit.Record) bool {
		for _, r := range recs {
			if r.Type == audit.TypeServerReplaced && r.Epoch == string(epB) && r.Fields[audit.FieldPrevEpoch] == string(epA) {
				return true
			}
		}
		return false
	})
}

// When the client disconnects, the agent run is over: every live grant of
// the run is revoked with reason run_ended, in the grants file and in the
// audit log, before the host records client_closed.
func TestGrantsRevokedWhenClientDisconnects(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	id, ep, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", map[string]any{"key": "k"})
	s.close() // waits for the host to exit

	store, err := grant.Open(layout.GrantStore(p.dir, epoch.RunID(s.run)))
	if err != nil {
		t.Fatal(err)
	}
	var g *grant.Grant
	for _, x := range store.Grants {
		if string(x.ID) == id {
			g = x
		}
	}
	if g == nil || g.RevokedAt == nil || g.RevokedReason != grant.RevokedRunEnded {
		t.Fatalf("grant %s after the client disconnected: %+v, want revoked with reason %s", id, g, grant.RevokedRunEnded)
	}
	recs := p.records()
	revoked, closed := -1, -1
	for i, r := range recs {
		switch {
		case r.Type == audit.TypeGrantRevoked && r.Fields["grant"] == id:
			if r.Fields["reason"] != grant.RevokedRunEnded || r.Epoch != string(ep) || r.Run != s.run {
				t.Errorf("grant_revoked record: epoch %s run %s fields %v, want epoch %s run %s reason %s", r.Epoch, r.Run, r.Fields, ep, s.run, grant.RevokedRunEnded)
			}
			revoked = i
		case r.Type == audit.TypeClientClosed && r.Run == s.run && r.Epoch == "":
			closed = i
		}
	}
	if revoked < 0 || closed < 0 || revoked > closed {
		t.Fatalf("audit log: grant_revoked of %s at %d, client_closed at %d: want the revocation recorded before the run closes\n%s", id, revoked, closed, gFormat(recs))
	}
}
