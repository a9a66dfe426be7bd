package host_test

// End-to-end tests of the host's audit log (.mcpepoch/audit.jsonl) with
// real MCP client sessions: the seed's sequence of events, tampering,
// secrets, a host killed while calls run and two hosts sharing one log.
// Shared test code (names starting with g) is in grants_e2e_test.go.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// aStep is one expected record of a sequence.
type aStep struct {
	typ    string
	epoch  string
	fields map[string]string // members that must have these values
}

// aFind returns the index of the first record at or after from that
// matches st, or -1.
func aFind(recs []audit.Record, from int, st aStep) int {
	for i := from; i < len(recs); i++ {
		r := recs[i]
		if r.Type != st.typ || (st.epoch != "" && r.Epoch != st.epoch) {
			continue
		}
		match := true
		for k, v := range st.fields {
			if fmt.Sprint(r.Fields[k]) != v {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// aSequence reports whether steps appear in recs in order (other records
// may come between), and the index reached.
func aSequence(recs []audit.Record, steps []aStep) (bool, int) {
	at := 0
	for i, st := range steps {
		j := aFind(recs, at, st)
		if j < 0 {
			return false, i
		}
		at = j + 1
	}
	return true, len(steps)
}

// TestAuditSeedSequence: the seed's sequence of events for a real client
// session, in order: server_started A, approval_granted A, tool_called A,
// server_replaced A → B, authorization_denied (stale_epoch) B.
func TestAuditSeedSequence(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	s := gConnect(t, p)
	s.list()
	epA, pidA := p.epoch(s.run)
	args := map[string]any{"key": "seq", "delayMs": 0}
	s.rpcError("slow_write", args, host.CodeAuthorizationRequired, "authorization_required:")
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", args)
	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B"})
	p.cli("record")
	epB, pidB := p.epoch(s.run)
	s.rpcError("slow_write", args, host.CodeAuthorizationStale, "authorization_stale:")

	a, b := string(epA), string(epB)
	argsJSON, _ := json.Marshal(args)
	key, err := audit.LoadKey(layout.DigestKey(p.dir))
	if err != nil {
		t.Fatal(err)
	}
	steps := []aStep{
		{audit.TypeServerStarted, a, map[string]string{"pid": strconv.Itoa(pidA)}},
		{audit.TypeAuthorizationDenied, a, map[string]string{"tool": "slow_write", "reason": "authorization_required"}},
		{audit.TypeApprovalGranted, a, map[string]string{"grant": gid, "expires_when": "agent-run-ends",
			"tool_scope": "[slow_write]", "credential_scope": "[" + gStaging + "]"}},
		{audit.TypeToolCalled, a, map[string]string{"tool": "slow_write", "grant": gid, "args_digest": key.ArgsDigest(argsJSON)}},
		{audit.TypeToolResult, a, map[string]string{"tool": "slow_write", "is_error": "false"}},
		{audit.TypeBuildRecorded, "", nil},
		{audit.TypeServerReplaced, b, map[string]string{"prev_epoch": a, "grants_revoked": "1"}},
		{audit.TypeServerStarted, b, map[string]string{"pid": strconv.Itoa(pidB)}},
		{audit.TypeAuthorizationDenied, b, map[string]string{"tool": "slow_write", "reason": "stale_epoch", "approved_epoch": a, "current_epoch": b}},
	}
	recs := p.waitRecords("stale_epoch denial", func(rs []audit.Record) bool {
		ok, _ := aSequence(rs, steps)
		return ok
	})
	// The revocation of the grant is recorded with the replacement.
	if i := aFind(recs, 0, aStep{audit.TypeGrantRevoked, a, map[string]string{"grant": gid, "reason": "epoch_changed"}}); i < 0 {
		t.Errorf("no grant_revoked record for %s:\n%s", gid, gFormat(recs))
	}
	for _, r := range recs {
		if r.Run != "" && r.Run != s.run {
			t.Errorf("seq %d: run %s, want %s", r.Seq, r.Run, s.run)
		}
		if r.Type == audit.TypeToolCalled && r.Epoch == b {
			t.Errorf("seq %d: a call reached epoch B without approval", r.Seq)
		}
	}

	s.close()
	out, code := p.verify()
	if code != 0 || !strings.Contains(out.Stdout, "chain intact") {
		t.Fatalf("mcpepoch audit verify after the session: exit %d\n%s", code, out)
	}
	recs = p.records()
	if last := recs[len(recs)-1]; last.Type != audit.TypeClientClosed || last.Run != s.run {
		t.Errorf("last record %s (run %s), want client_closed of %s", last.Type, last.Run, s.run)
	}
	// The run's grants ended with it.
	for _, g := range p.grants() {
		if g.RevokedAt == nil {
			t.Errorf("grant %s (epoch %s) still live after its run ended", g.ID, g.ExecutionEpoch)
		}
	}
}

// aSession runs a client session with approvals, calls and a restart, and
// closes it, leaving a log of a few dozen records.
func aSession(t *testing.T, p *project, env ...string) *gSession {
	t.Helper()
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	s.rpcError("slow_write", map[string]any{"key": "t"}, host.CodeAuthorizationRequired, "authorization_required:")
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	for i := range 5 {
		s.text("slow_write", map[string]any{"key": "t", "n": i})
		s.text("version", nil)
	}
	p.cli("restart")
	s.rpcError("slow_write", map[string]any{"key": "t"}, host.CodeAuthorizationStale, "authorization_stale:")
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", map[string]any{"key": "t"})
	s.close()
	return s
}

// TestAuditTampering: every kind of change to a real session's log makes
// mcpepoch audit verify exit 5 and name the line.
func TestAuditTampering(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	aSession(t, p)
	logPath := layout.Audit(p.dir)
	if out, code := p.verify(); code != 0 {
		t.Fatalf("untouched log: exit %d\n%s", code, out)
	}
	orig, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(audit.HeadPath(logPath))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // after the final newline
	n := len(lines)
	if n < 20 {
		t.Fatalf("session left %d records, want at least 20", n)
	}
	mid := n / 2

	cases := []struct {
		name   string
		mutate func([]string) []string
		line   int    // the line verify must name
		kind   string // words of the finding
	}{
		{"unchanged", func(l []string) []string { return l }, 0, ""},
		{"edit", func(l []string) []string {
			var m map[string]any
			if err := json.Unmarshal([]byte(l[mid-1]), &m); err != nil {
				t.Fatal(err)
			}
			m["tool"] = "delete_everything"
			b, _ := json.Marshal(m)
			l[mid-1] = string(b) + "\n"
			return l
		}, mid, "edited"},
		{"delete", func(l []string) []string { return append(l[:mid-1:mid-1], l[mid:]...) }, mid, "missing"},
		{"reorder", func(l []string) []string {
			l[mid-1], l[mid] = l[mid], l[mid-1]
			return l
		}, mid, "seq"},
		{"truncate", func(l []string) []string { return l[:n-3] }, n - 2, "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lp := filepath.Join(dir, "audit.jsonl")
			mutated := c.mutate(append([]string(nil), lines...))
			if err := os.WriteFile(lp, []byte(strings.Join(mutated, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(audit.HeadPath(lp), head, 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := p.verify("--log", lp)
			if c.line == 0 {
				if code != 0 {
					t.Fatalf("copy of the untouched log: exit %d\n%s", code, out)
				}
				return
			}
			if code != 5 {
				t.Fatalf("verify after %s: exit %d, want 5\n%s", c.name, code, out)
			}
			want := fmt.Sprintf("%s:%d: ", lp, c.line)
			if !strings.Contains(out.Stdout, want) || !strings.Contains(out.Stdout, c.kind) {
				t.Fatalf("verify after %s does not name line %d (%q) with %q:\n%s", c.name, c.line, want, c.kind, out.Stdout)
			}
		})
	}
	// The project's own log was not touched by any of this.
	if out, code := p.verify(); code != 0 {
		t.Fatalf("project log after the copies: exit %d\n%s", code, out)
	}
}

// TestAuditSecretNeverWritten: a credential in the host's environment and
// in tool arguments appears in no file under .mcpepoch/, during the session
// or after it.
func TestAuditSecretNeverWritten(t *testing.T) {
	t.Parallel()
	b := make([]byte, 12)
	rand.Read(b)
	secret := "s3cr3t-" + hex.EncodeToString(b)
	p := newGrantsProject(t, nil)
	s := gConnect(t, p, "INVENTORY_API_TOKEN="+secret, "PAYMENTS_API_KEY="+secret)
	s.list()
	p.ready(s.run)
	withSecret := map[string]any{"key": secret, "token": secret}
	s.rpcError("slow_write", withSecret, host.CodeAuthorizationRequired, "authorization_required:")
	s.rpcError("publish_preview", map[string]any{"branch": secret}, host.CodeAuthorizationRequired, "authorization_required:")
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	p.approve(s.run, "--tools", "publish_preview", "--credential", gPayments, "--expires", "per-call")
	if got := s.text("slow_write", withSecret); got != "count=1 revision=A" {
		t.Fatalf("slow_write: %q", got)
	}
	s.refusal("publish_preview", map[string]any{"branch": secret, "target": "nowhere"})
	if got := s.text("publish_preview", map[string]any{"branch": secret}); !strings.Contains(got, secret) {
		t.Fatalf("publish_preview did not reach the server with its arguments: %q", got)
	}
	s.text("version", map[string]any{"note": secret})
	// The secret did reach the server: the test would see it if it leaked.
	if _, err := os.Stat(filepath.Join(p.counter, secret+".count")); err != nil {
		t.Fatalf("slow_write did not run with the secret key: %v", err)
	}

	p.waitRecords("tool_result of version", func(rs []audit.Record) bool {
		return aFind(rs, 0, aStep{audit.TypeToolResult, "", map[string]string{"tool": "version"}}) >= 0
	})
	aNoSecret(t, p, secret) // while the host runs: execution record, grants
	p.cli("restart")
	s.rpcError("slow_write", withSecret, host.CodeAuthorizationStale, "authorization_stale:")
	p.waitRecords("stale denial", func(rs []audit.Record) bool {
		return aFind(rs, 0, aStep{audit.TypeAuthorizationDenied, "", map[string]string{"reason": "stale_epoch"}}) >= 0
	})
	s.close()
	aNoSecret(t, p, secret)
	if out, code := p.verify(); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s", code, out)
	}
}

// aNoSecret reads every file under .mcpepoch/ and fails if one holds
// secret.
func aNoSecret(t *testing.T, p *project, secret string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(filepath.Join(p.dir, ".mcpepoch"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(path, secret) {
			t.Errorf("file name %s holds the secret", path)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file renamed meanwhile
		}
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret:\n%s", path, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d files under .mcpepoch/: the walk checked nothing", files)
	}
}

// TestAuditCrashSafety kills the host with SIGKILL while calls run, several
// times; the log still verifies, and a new host on the same project
// appends to it and it verifies again.
func TestAuditCrashSafety(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	var runs []string
	for round := range 3 {
		s := gConnect(t, p)
		runs = append(runs, s.run)
		s.list()
		st := p.ready(s.run)
		child := st.Execution.ProcessID
		testenv.KillGroupOnCleanup(t, child)
		p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)

		var calls atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name, args := "slow_write", map[string]any{"key": fmt.Sprintf("crash%d", w), "delayMs": 5}
					if i%2 == 1 {
						name, args = "version", nil
					}
					if _, err := s.call(name, args); err != nil {
						return // the host is gone
					}
					calls.Add(1)
				}
			})
		}
		deadline := time.Now().Add(waitLong)
		for calls.Load() < int64(20+10*round) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		s.killed = true
		if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if calls.Load() < 20 {
			t.Fatalf("round %d: only %d calls before the kill", round, calls.Load())
		}
		gWaitGone(t, child)

		out, code := p.verify()
		if code != 0 {
			t.Fatalf("round %d: audit verify after SIGKILL: exit %d\n%s", round, code, out)
		}
		t.Logf("round %d: %d calls, then SIGKILL; audit verify:\n%s", round, calls.Load(), out.Stdout)
	}

	s := gConnect(t, p)
	runs = append(runs, s.run)
	s.list()
	p.ready(s.run)
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	s.text("slow_write", map[string]any{"key": "after"})
	s.close()
	out, code := p.verify()
	if code != 0 || !strings.Contains(out.Stdout, "chain intact") {
		t.Fatalf("audit verify after a clean session: exit %d\n%s", code, out)
	}
	recs := p.records()
	aContiguous(t, recs)
	for _, run := range runs {
		if len(audit.Select(recs, audit.Filter{Run: run, Type: audit.TypeClientConnected})) != 1 {
			t.Errorf("run %s: no client_connected record", run)
		}
	}
	last := runs[len(runs)-1]
	if aFind(recs, 0, aStep{audit.TypeToolCalled, "", map[string]string{"tool": "slow_write"}}) < 0 ||
		len(audit.Select(recs, audit.Filter{Run: last, Type: audit.TypeToolCalled})) != 1 ||
		recs[len(recs)-1].Type != audit.TypeClientClosed || recs[len(recs)-1].Run != last {
		t.Errorf("the host after the crashes did not append its session:\n%s", gFormat(recs))
	}
}

// gWaitGone waits for a process to end.
func gWaitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !gGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs %s after its host was killed", pid, waitLong)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// aContiguous checks seqs 1, 2, … without gaps.
func aContiguous(t *testing.T, recs []audit.Record) {
	t.Helper()
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d:\n%s", i+1, r.Seq, gFormat(recs))
		}
	}
}

// TestAuditTwoHosts: two hosts of one project, each with its own client (a
// go-sdk client and the TypeScript SDK's), call tools at once; they share
// one log that verifies, with contiguous seqs and both runs' records.
func TestAuditTwoHosts(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)

	ts := testenv.Driver(t, p.dir, nil, testenv.Mcpepoch(t), "host", "--dir", p.dir, "--", "sh", "./server.sh")
	if _, err := ts.List(); err != nil {
		t.Fatalf("TypeScript client tools/list: %v", err)
	}
	var tsRun string
	deadline := time.Now().Add(waitLong)
	for tsRun == "" {
		for _, h := range p.hosts() {
			if string(h.AgentRun) != s.run {
				tsRun = string(h.AgentRun)
			}
		}
		if tsRun == "" && time.Now().After(deadline) {
			t.Fatalf("the second host does not answer mcpepoch status")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.ready(tsRun)

	// Each approval is for one agent run only.
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if _, err := ts.Call("slow_write", map[string]any{"key": "ts"}); err == nil || err.Code == nil || *err.Code != host.CodeAuthorizationRequired {
		t.Fatalf("TypeScript client called slow_write under the other run's grant: %v", err)
	}
	p.approve(tsRun, "--tools", "slow_write", "--credential", gStaging)
	out, code := p.tryApprove("", "--tools", "slow_write", "--credential", gStaging)
	if code != 2 || !strings.Contains(out.Stderr, "--run") {
		t.Errorf("approve --yes without --run for two hosts: exit %d\n%s", code, out)
	}

	const perClient = 20
	var wg sync.WaitGroup
	var goErrs atomic.Int64
	for i := range perClient {
		wg.Go(func() {
			name, args := "slow_write", map[string]any{"key": "go", "n": i}
			if i%2 == 1 {
				name, args = "version", map[string]any{"note": i}
			}
			res, err := s.call(name, args)
			var werr *jsonrpc.Error
			if err != nil || res.IsError {
				goErrs.Add(1)
				if errors.As(err, &werr) {
					t.Errorf("go client %s: %d %s", name, werr.Code, werr.Message)
				} else {
					t.Errorf("go client %s: %v %v", name, res, err)
				}
			}
		})
	}
	var pending []*testenv.Pending
	for i := range perClient {
		if i%2 == 1 {
			pending = append(pending, ts.CallAsync("version", map[string]any{"note": i}))
		} else {
			pending = append(pending, ts.CallAsync("slow_write", map[string]any{"key": "ts", "n": i}))
		}
	}
	for _, pc := range pending {
		if res, err := pc.Wait(); err != nil || res.IsError {
			t.Errorf("TypeScript client call: %v %v", res, err)
		}
	}
	wg.Wait()
	if c, _ := p.counts("go"); strings.TrimSpace(c) != strconv.Itoa(perClient/2) {
		t.Errorf("go client's counter %q, want %d", c, perClient/2)
	}
	if c, _ := p.counts("ts"); strings.TrimSpace(c) != strconv.Itoa(perClient/2) {
		t.Errorf("TypeScript client's counter %q, want %d", c, perClient/2)
	}

	s.close()
	ts.Close()
	deadline = time.Now().Add(waitLong)
	for len(p.hosts()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("hosts still answer after both clients closed: %+v", p.hosts())
		}
		time.Sleep(20 * time.Millisecond)
	}

	entries, err := os.ReadDir(filepath.Join(p.dir, ".mcpepoch"))
	if err != nil {
		t.Fatal(err)
	}
	logs := 0
	for _, e := range entries {
		if regexp.MustCompile(`\.jsonl$`).MatchString(e.Name()) {
			logs++
		}
	}
	if logs != 1 {
		t.Errorf("%d logs in .mcpepoch/, want 1: %v", logs, entries)
	}
	if out, code := p.verify(); code != 0 || strings.Contains(out.Stdout, "warning") {
		t.Fatalf("audit verify: exit %d\n%s", code, out)
	}
	recs := p.records()
	aContiguous(t, recs)
	for _, run := range []string{s.run, tsRun} {
		called := audit.Select(recs, audit.Filter{Run: run, Type: audit.TypeToolCalled})
		results := audit.Select(recs, audit.Filter{Run: run, Type: audit.TypeToolResult})
		if len(called) != perClient || len(results) != perClient {
			t.Errorf("run %s: %d tool_called and %d tool_result records, want %d each", run, len(called), len(results), perClient)
		}
		if len(audit.Select(recs, audit.Filter{Run: run, Type: audit.TypeClientClosed})) != 1 {
			t.Errorf("run %s: no client_closed record", run)
		}
	}
	// The two runs' records interleave: they really shared the log at once.
	first, last := map[string]int64{}, map[string]int64{}
	for _, r := range audit.Select(recs, audit.Filter{Type: audit.TypeToolCalled}) {
		if first[r.Run] == 0 {
			first[r.Run] = r.Seq
		}
		last[r.Run] = r.Seq
	}
	if last[s.run] < first[tsRun] || last[tsRun] < first[s.run] {
		t.Logf("calls of the two runs did not overlap in the log (first/last %v %v)", first, last)
	}
}

// TestAuditRewriteFoundByStateCopy: the hosts keep a copy of the audit
// head outside the project (the user's state directory). A log rewritten
// with a new, intact chain and a head to match, which whoever can write
// the project can make while no host runs, verifies against itself; audit
// verify compares it with the copy, exits 5 and names the copy, and the
// next host refuses to write after it.
func TestAuditRewriteFoundByStateCopy(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	aSession(t, p)
	state, err := layout.ProjectState(p.dir) // the tests' XDG_STATE_HOME, which the host inherited
	if err != nil {
		t.Fatal(err)
	}
	logPath := layout.Audit(p.dir)
	copyPath := audit.CopyHeadPath(state, logPath)
	kept, ok, err := audit.ReadHead(copyPath)
	if own, _, _ := audit.ReadHead(audit.HeadPath(logPath)); err != nil || !ok || kept != own {
		t.Fatalf("copy of the head at %s: %+v %v %v; the project's head %+v", copyPath, kept, ok, err, own)
	}
	if out, code := p.verify(); code != 0 || !strings.Contains(out.Stdout, "agrees") {
		t.Fatalf("untouched log: exit %d\n%s", code, out)
	}

	rewriteLog(t, p.dir, func(_ int, r audit.Record) map[string]any {
		if r.Type == audit.TypeToolCalled && r.Fields[audit.FieldTool] == "slow_write" {
			f := maps.Clone(r.Fields)
			f[audit.FieldTool] = "version" // the write that ran, disguised as a read
			return f
		}
		return r.Fields
	})
	if out, code := p.verify("--log", logPath); code != 5 {
		t.Fatalf("rewritten log: exit %d, want 5\n%s", code, out)
	} else if !strings.Contains(out.Stdout, copyPath) || !strings.Contains(out.Stdout, "rewritten") {
		t.Fatalf("verify does not name the copy %s:\n%s", copyPath, out)
	} else {
		t.Logf("verify:\n%s", out.Stdout)
	}
	if out, code := p.runCLI(nil, p.hostArgs(nil)...); code == 0 || !strings.Contains(out.Stderr, copyPath) {
		t.Fatalf("a host on the rewritten log: exit %d, want a refusal naming %s\n%s", code, copyPath, out.Stderr)
	} else {
		t.Logf("host:\n%s", out.Stderr)
	}
}
