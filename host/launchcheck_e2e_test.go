package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// raced returns the server_replaced records whose reason says the
// identity changed while a launch started.
func raced(records []audit.Record) []audit.Record {
	var out []audit.Record
	for _, r := range records {
		if reason, _ := r.Fields["reason"].(string); r.Type == audit.TypeServerReplaced && strings.HasPrefix(reason, "identity changed while the server started") {
			out = append(out, r)
		}
	}
	return out
}

// The server renames new code over its own entry while it starts, after
// the host computed the launch's identity: mcpepoch restart must not leave
// that epoch running under an identity that names the old bytes. The host
// sees the change once the server is up, does not use the epoch and starts
// again under a new one, whose identity is the code that runs.
func TestLaunchCheckCodeSwappedWhileStarting(t *testing.T) {
	p := newProject(t, nil)
	p.server("if [ -f next.sh ]; then mv next.sh server.sh; fi\n", map[string]string{"REV": "A"})
	c := startRaw(t, p, nil)
	c.initialize()
	before := p.status()
	p.write("next.sh", "#!/bin/sh\nexport REV='B'\nexec ./bin/fixture\n")

	p.restart()
	after := p.waitState(host.StateReady, waitLong)
	if after.Execution.EntryDigest == before.Execution.EntryDigest {
		t.Errorf("running entry digest %s after the restart, the digest of the bytes the server replaced", after.Execution.EntryDigest)
	}
	rs := raced(p.records())
	if len(rs) != 1 {
		t.Fatalf("%d server_replaced records for a launch whose code changed while it started, want 1:\n%s", len(rs), c.stderr.String())
	}
	if rs[0].Epoch != string(after.Execution.Epoch) || rs[0].Fields[audit.FieldPrevEpoch] == string(before.Execution.Epoch) {
		t.Errorf("the replacement %s → %s; want the restart's epoch replaced by the running one %s", rs[0].Fields[audit.FieldPrevEpoch], rs[0].Epoch, after.Execution.Epoch)
	}
	if !strings.Contains(c.stderr.String(), "changed while pid") {
		t.Errorf("the host's log does not say the epoch was not used:\n%s", c.stderr.String())
	}
}

// deliver = "env": the relaunch that carries the approved variable swaps
// new code in while it starts. The epoch the person approved is not kept:
// its grant is revoked, the server starts again under a new epoch without
// the variable, and the call needs a new approval.
func TestLaunchCheckEnvRelaunchSwapped(t *testing.T) {
	p := newEnvProject(t)
	p.revision("B")
	next := p.read("server.sh")
	p.revision("A")
	p.write("server.sh", strings.Replace(p.read("server.sh"), "#!/bin/sh\n",
		"#!/bin/sh\nif [ -n \"${API_TOKEN+set}\" ] && [ -f next.sh ]; then mv next.sh server.sh; fi\n", 1))
	p.write("next.sh", next)
	s := gConnect(t, p.project)
	p.launches(1)
	before := p.status()

	p.cli("approve", "--yes", "--all")
	got := p.launches(3)
	want := []string{"rev=A api=none", "rev=A api=" + hashed(envSecret), "rev=B api=none"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("launches %q, want %q", got, want)
	}
	after := p.waitState(host.StateReady, waitLong)
	if after.Execution.Epoch == before.Execution.Epoch {
		t.Errorf("epoch %s still runs after its code changed in the relaunch", after.Execution.Epoch)
	}
	if len(raced(p.records())) != 1 {
		t.Errorf("no server_replaced record for the relaunch whose code changed:\n%s", s.stderr)
	}
	s.rpcError("plain", nil, host.CodeAuthorizationStale, "authorization_stale:")
}

// deliver = "env": a call held for an approval given in the MCP client
// waits for the process started with the variable, like one approved with
// mcpepoch approve; the relaunch, same catalog, sends no
// notifications/tools/list_changed and does not log "[] changed".
func TestEnvDeliveryHeldCallWaitsForRelaunch(t *testing.T) {
	p := newEnvProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `proof = ["same-user"]`, `proof = ["client"]`, 1))
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	var listChanged atomic.Int32
	opts := k.options(false)
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { listChanged.Add(1) }
	s := eConnect(t, p.project, opts, "2025-11-25")
	if got := s.text("plain", nil); got == "" {
		t.Fatal("plain: empty result")
	}
	if got := p.launches(2); got[1] != "rev=A api="+hashed(envSecret) {
		t.Fatalf("launches %q, want a second with the variable", got)
	}
	if n := listChanged.Load(); n != 0 {
		t.Errorf("%d notifications/tools/list_changed for a relaunch with the same catalog", n)
	}
	if strings.Contains(s.stderr.String(), "[] changed") {
		t.Errorf("the host's log says \"[] changed\" for the relaunch:\n%s", s.stderr.String())
	}
}

// deliver = "env": a call held for an approval given on the host's own
// approval page (url elicitation, presence) waits for the process started
// with the variable and runs there, as with mcpepoch approve; it is not
// sent to the process being stopped (server_restarted).
func TestEnvDeliveryPageApprovalWaitsForRelaunch(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p := newEnvProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]\n", "", 1))
	env := []string{"XDG_CONFIG_HOME=" + filepath.Join(p.dir, "config")}
	enrollVirtualKey(t, ctx, p.project, env)
	k := newAsker(accept)
	s := eConnect(t, p.project, k.options(true), "2025-11-25", env...)
	done := make(chan error, 1)
	go func() {
		res, err := s.call("plain", nil)
		if err == nil && (res.IsError || gText(res) == "") {
			err = fmt.Errorf("result %q", gText(res))
		}
		done <- err
	}()
	e := k.next(t)
	if e.Mode != "url" {
		t.Fatalf("elicitation: %+v, want url mode", e)
	}
	if st := click(t, ctx, e.URL, "approve"); st != "ok: Approved." {
		t.Fatalf("approval page: %s", st)
	}
	if err := wantDone(t, done); err != nil {
		t.Fatalf("the held call after the page's approval: %v", err)
	}
	if got := p.launches(2); got[1] != "rev=A api="+hashed(envSecret) {
		t.Fatalf("launches %q, want a second with the variable", got)
	}
}

// The server's code changes on disk while its epoch runs and no build
// signal comes: status says running ≠ built, and an approval for that
// epoch is refused, so no deliver = "env" relaunch gives the variable to
// code the epoch's identity does not name.
func TestLaunchCheckDriftWithoutBuildSignal(t *testing.T) {
	p := newEnvProject(t)
	gConnect(t, p.project)
	p.launches(1)
	p.waitCatalog() // the first epoch's launch check is done: what changes now is drift
	p.revision("B")
	st := p.status()
	if !strings.Contains(strings.Join(st.Drift, "\n"), "changed on disk since epoch "+string(st.Execution.Epoch)) {
		t.Errorf("status drift %q, want the change on disk", st.Drift)
	}
	out, code := p.runCLI(nil, "approve", "--yes", "--all")
	if code == 0 || !strings.Contains(out.String(), "is not approved") {
		t.Fatalf("approve of an epoch whose code changed: exit %d\n%s", code, out)
	}
	if gs := p.grants(); len(gs) != 0 {
		t.Errorf("grants %+v, want none", gs)
	}
	if got := p.launches(1); len(got) != 1 {
		t.Errorf("launches %q, want the first only", got)
	}
}
