package host_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
)

// TestRevokedGrantNamed: a grant of epoch A ends with its epoch on a
// rebuild; the person approves again for epoch B and then revokes that
// grant with mcpepoch revoke. The next call is refused as
// authorization_required naming the revocation, never as
// authorization_stale citing the older grant of epoch A.
func TestRevokedGrantNamed(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	s := gConnect(t, p)
	s.list()
	args := map[string]any{"key": "seed", "delayMs": 0}
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if got := s.text("slow_write", args); got != "count=1 revision=A" {
		t.Fatalf("slow_write on A: %q", got)
	}
	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B"})
	p.cli("record")
	epB, _ := p.epoch(s.run)
	s.list()
	gidB, gep, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if gep != epB {
		t.Fatalf("approved for epoch %s, running %s", gep, epB)
	}
	if got := s.text("slow_write", args); got != "count=2 revision=B" {
		t.Fatalf("slow_write on B: %q", got)
	}

	p.cli("revoke", gidB)
	if g := p.grant(gidB); g.RevokedReason != grant.RevokedByUser {
		t.Fatalf("grant %s after revoke: reason %q, want %q", gidB, g.RevokedReason, grant.RevokedByUser)
	}
	count, started := p.counts("seed")
	_, err := s.call("slow_write", args)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("call after revoke: error %v, want a JSON-RPC error", err)
	}
	if werr.Code != host.CodeAuthorizationRequired || !strings.HasPrefix(werr.Message, "authorization_required: grant "+gidB+" was revoked (tool slow_write, execution epoch "+string(epB)+")") {
		t.Errorf("call after revoke: error %d %q, want %d authorization_required naming the revocation of %s", werr.Code, werr.Message, host.CodeAuthorizationRequired, gidB)
	}
	data := s.rpcError("slow_write", args, host.CodeAuthorizationRequired, "authorization_required:")
	wantData(t, data, map[string]any{"error": "authorization_required", "revoked": true, "grant": gidB,
		"reason": "grant " + gidB + " was revoked", "currentEpoch": epB, "tool": "slow_write"})
	if c, st := p.counts("seed"); c != count || st != started {
		t.Fatalf("a refused call reached the server: count %q → %q, started %q → %q", count, c, started, st)
	}
}

// TestRevokeByPrefix: revoke takes a unique prefix of a grant id, as
// --run takes one of an agent run; a grant revoked already is named as
// such, with when and why, and an id no grant has is said to be that.
func TestRevokeByPrefix(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	out, code := p.runCLI(nil, "revoke", gid[:12])
	if code != 0 || !strings.Contains(out.Stdout, "revoked grant "+gid) {
		t.Fatalf("revoke by prefix %s: exit %d\n%s", gid[:12], code, out)
	}
	if g := p.grant(gid); g.RevokedReason != grant.RevokedByUser {
		t.Fatalf("grant %s after revoke: reason %q", gid, g.RevokedReason)
	}
	out, code = p.runCLI(nil, "revoke", gid)
	if code == 0 || !strings.Contains(out.Stderr, "grant "+gid+" already revoked at ") || !strings.Contains(out.Stderr, "("+grant.RevokedByUser+")") {
		t.Errorf("revoke of a revoked grant: exit %d\n%s", code, out)
	}
	if out, _ := p.runCLI(nil, "grants", "--live"); !strings.HasPrefix(out.Stdout, "no live grants in ") {
		t.Errorf("grants --live with only a revoked grant: %s", out)
	}
	out, code = p.runCLI(nil, "revoke", "0000")
	if code == 0 || !strings.Contains(out.Stderr, "no grant with that id") {
		t.Errorf("revoke of an id no grant has: exit %d\n%s", code, out)
	}
}
