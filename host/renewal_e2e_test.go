package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
)

// enroll adds a to the project's trust store (config/mcpepoch) before a
// host starts, as a first enrollment or one the store's root confirms
// (none needed for the first), and returns the store.
func (p *project) enroll(a trust.Authenticator) *trust.Store {
	p.t.Helper()
	store, err := trust.Open(filepath.Join(p.dir, "config", "mcpepoch"))
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := store.Propose(trust.OpAdd, a)
	if err == nil {
		err = store.Apply(c, nil)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return store
}

// sendHost sends one local API request to the host of run and returns its
// answer.
func (p *project) sendHost(run, typ string, payload any) (notify.Response, error) {
	p.t.Helper()
	dir, err := notify.Dir(p.dir)
	if err != nil {
		p.t.Fatal(err)
	}
	var b []byte
	if payload != nil {
		b, _ = json.Marshal(payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return notify.Send(ctx, filepath.Join(dir, run+notify.SocketSuffix), notify.Request{Type: typ, Payload: b})
}

// review returns the first page of the review of run.
func (p *project) review(run string) localapi.Review {
	p.t.Helper()
	resp, err := p.sendHost(run, localapi.TypeReview, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	rv, err := localapi.DecodePayload[localapi.Review](resp.Payload)
	if err != nil {
		p.t.Fatal(err)
	}
	return rv
}

// TestRenewalAfterRebuild: grants on three tools and a credential scope;
// a rebuild changes one tool's definition and removes another. The host
// prepares a renewal for the new epoch: the unchanged tool pre-selected
// with its scope, the changed one offered but not selected, the removed
// one dropped; renewal_prepared says so. Approving the renewal as
// prepared makes a grant, with the shortest expiry of the grants that
// covered its tools, on the new epoch that covers the unchanged tool
// only, names the renewal in approval_granted, and ends the renewal; a
// second approval naming it is refused.
func TestRenewalAfterRebuild(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha,beta"})
	s := gConnect(t, p)
	s.list()
	epA, _ := p.epoch(s.run)
	if rv := p.review(s.run); rv.Renewal != nil {
		t.Fatalf("a renewal before any grant was revoked: %+v", rv.Renewal)
	}
	p.approve(s.run, "--tools", "slow_write,alpha", "--credential", gStaging)
	p.approve(s.run, "--tools", "slow_write", "--credential", gStaging, "--expires", "10m")
	p.approve(s.run, "--tools", "beta", "--expires", "5m")

	p.serverWithCounter(map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha", "FIXTURE_DESCRIPTION_BYTES": "80"})
	if rec := p.cli("record"); !strings.Contains(rec.Stderr, "3 grants revoked") {
		t.Fatalf("record:\n%s", rec)
	}
	epB, _ := p.epoch(s.run)
	rv := p.review(s.run)
	r := rv.Renewal
	if r == nil {
		t.Fatalf("no renewal after a rebuild that revoked grants: review %+v", rv)
	}
	if r.FromEpoch != epA || r.Epoch != epB || r.CatalogRevision != rv.CatalogRevision || len(r.Revoked) != 3 {
		t.Errorf("renewal from %s to %s (catalog %s, %d revoked), want %s → %s, catalog %s, 3 revoked", r.FromEpoch, r.Epoch, r.CatalogRevision, len(r.Revoked), epA, epB, rv.CatalogRevision)
	}
	if !slices.Equal(r.Tools, []string{"slow_write"}) || !slices.Equal(r.Credentials, []string{gStaging}) {
		t.Errorf("pre-selected %v with %v, want [slow_write] with [%s]", r.Tools, r.Credentials, gStaging)
	}
	if !slices.Equal(r.ChangedTools(), []string{"alpha"}) || len(r.Changed[0].Changes) == 0 || r.Changed[0].Changes[0].Kind != "description_changed" {
		t.Errorf("changed %+v, want alpha with its description change", r.Changed)
	}
	if !slices.Equal(r.Dropped, []string{"beta"}) {
		t.Errorf("dropped %v, want [beta]", r.Dropped)
	}
	if r.Expires != "10m0s" {
		t.Errorf("expires %q, want the shortest of the grants that covered slow_write (10m0s)", r.Expires)
	}
	d, err := grant.ParseDigest(r.ID)
	if err != nil || d.ShortCode() != r.ShortCode {
		t.Errorf("renewal id %q short code %q: want a grant digest and its short code (%v)", r.ID, r.ShortCode, err)
	}
	recs := p.waitRecords("renewal_prepared", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeRenewalPrepared)) > 0 })
	prep := filterType(recs, audit.TypeRenewalPrepared)[0]
	if prep.Epoch != string(epB) || prep.Fields["renewal"] != r.ID || !sameList(prep.Fields["tools"], "slow_write") ||
		!sameList(prep.Fields["changed_tools"], "alpha") || !sameList(prep.Fields["dropped_tools"], "beta") {
		t.Errorf("renewal_prepared %+v", prep)
	}

	id, _, _ := p.approve(s.run, "--renewal")
	g := p.grant(id)
	if g.ExecutionEpoch != epB || !slices.Equal(g.ToolScope, []string{"slow_write"}) || g.ExpiresWhen != "10m0s" {
		t.Errorf("grant of the renewal: %+v", g)
	}
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Errorf("slow_write under the renewed grant: %q", got)
	}
	// alpha changed: not renewed, its grant is still the one of epoch A.
	s.rpcError("alpha", nil, host.CodeAuthorizationStale, "authorization_stale:")
	p.waitRecords("approval_granted naming the renewal", func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID && a.Fields["grant"] == string(g.ID) {
				return true
			}
		}
		return false
	})
	if rv := p.review(s.run); rv.Renewal != nil {
		t.Errorf("the renewal is still offered once approved: %+v", rv.Renewal)
	}
	// Nothing waiting is not a failure: a script renewing after every
	// build goes on when nothing was revoked.
	if out, code := p.tryApprove(s.run, "--renewal"); code != 0 || !strings.Contains(out.Stderr, "no renewal to approve") {
		t.Errorf("approve --yes --renewal with no renewal left: exit %d, want 0 and a word\n%s", code, out)
	}
	_, err = p.sendHost(s.run, localapi.TypeApprove, r.Request(nil, localapi.ChannelScript))
	var re *notify.RemoteError
	if !errors.As(err, &re) || re.Code != localapi.CodeApprovalRefused || !strings.Contains(re.Message, "no longer offered") {
		t.Errorf("a second approval of the renewal: %v", err)
	}
}

// sameList reports whether an audit field decoded from JSON is the list want.
func sameList(v any, want ...string) bool {
	l, _ := v.([]any)
	if len(l) != len(want) {
		return false
	}
	for i, x := range l {
		if x != want[i] {
			return false
		}
	}
	return true
}

// TestRenewalThroughElicitation: after a rebuild ended a grant on three
// tools, two of which changed, a call of the unchanged one waiting for a
// person is asked for through the MCP client as the renewal: one accept
// (the form, where the project counts the client) grants it again, and
// approval_granted names the renewal. A call of a tool whose definition
// changed is asked for alone, never with the renewal.
func TestRenewalThroughElicitation(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha,beta"})
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `proof = ["same-user"]`, `proof = ["client", "same-user"]`, 1))
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	s := eConnect(t, p, k.options(false), "2025-11-25")
	p.approve(s.run, "--tools", "slow_write,alpha,beta", "--credential", gStaging)

	p.serverWithCounter(map[string]string{"FIXTURE_EXTRA_TOOLS": "alpha,beta", "FIXTURE_DESCRIPTION_BYTES": "80"})
	p.cli("record")
	p.epoch(s.run)
	s.list()
	r := p.review(s.run).Renewal
	if r == nil || !slices.Equal(r.Tools, []string{"slow_write"}) || !slices.Equal(r.ChangedTools(), []string{"alpha", "beta"}) {
		t.Fatalf("renewal %+v, want slow_write renewed, alpha and beta changed", r)
	}
	if err := wantDone(t, callAsync(s, t.Context(), "e")); err != nil {
		t.Fatalf("slow_write after the client's accept: %v", err)
	}
	if e := k.next(t); !strings.Contains(e.Message, r.ShortCode) {
		t.Errorf("elicitation %q: want the renewal's code %s", e.Message, r.ShortCode)
	}
	p.waitRecords("the renewal granted through the client", func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID && a.Fields["proof"] == string(approval.ProofClient) {
				return true
			}
		}
		return false
	})
	if _, err := s.call("alpha", nil); err != nil {
		t.Fatalf("alpha: %v", err)
	}
	if e := k.next(t); strings.Contains(e.Message, r.ShortCode) {
		t.Errorf("the changed tool alpha was asked for with the renewal: %q", e.Message)
	}
	for _, g := range p.grants() {
		if g.RevokedAt == nil && slices.Contains(g.ToolScope, "alpha") && slices.Contains(g.ToolScope, "slow_write") {
			t.Errorf("a grant covers the changed tool with the renewal: %+v", g)
		}
	}
}
