package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// raiseProof writes grants.proof = list into the project's mcpepoch.toml
// (replacing the one it has, if any) and sends a build signal with
// identical bytes: the epoch stays, the stricter policy is in force at
// once and revokes what it no longer counts. It returns the renewal the
// host prepared for the running epoch, failing the test without one.
func (p *project) raiseProof(t *testing.T, run, old, list string) *localapi.Renewal {
	t.Helper()
	toml := p.read("mcpepoch.toml")
	if old == "" {
		toml = strings.Replace(toml, "[grants]\n", "[grants]\nproof = "+list+"\n", 1)
	} else {
		toml = strings.Replace(toml, "proof = "+old+"\n", "proof = "+list+"\n", 1)
	}
	p.write("mcpepoch.toml", toml)
	ep, _ := p.epoch(run)
	p.record()
	r := p.review(run).Renewal
	if r == nil || r.Epoch != ep || r.FromEpoch != ep || !r.PolicyRaised || len(r.Revoked) != 1 || len(r.Tools) != 1 || r.Tools[0] != "slow_write" {
		t.Fatalf("renewal after proof = %s in epoch %s: %+v, want slow_write renewed on the same epoch", list, ep, r)
	}
	return r
}

// wantRenewalGranted waits for the approval_granted record of renewal r
// with proof.
func (p *project) wantRenewalGranted(r *localapi.Renewal, proof approval.Proof) {
	p.t.Helper()
	p.waitRecords("the renewal's approval_granted with proof "+string(proof), func(rs []audit.Record) bool {
		for _, a := range filterType(rs, audit.TypeApprovalGranted) {
			if a.Fields["renewal"] == r.ID && a.Fields["proof"] == string(proof) && a.Epoch == string(r.Epoch) {
				return true
			}
		}
		return false
	})
}

// TestRenewalAfterPolicyRaisedOnPage: a grant approved at a person's
// terminal, while terminal still counted, ends when mcpepoch.toml raises
// the proof to presence in the same epoch. The host prepares its renewal
// on that epoch at the raised proof: mcpepoch approve at a terminal is
// refused at once, and approve --web with nothing named opens the
// renewal, which says why it is asked; one press renews the grant with
// proof presence.
func TestRenewalAfterPolicyRaisedOnPage(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "[grants]\n", "[grants]\nproof = [\"presence\", \"terminal\"]\n", 1))
	enrollVirtualKey(t, ctx, p, env)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	p.approveAtTerminal(t, env, s.run)
	s.text("slow_write", map[string]any{"key": "k"})

	r := p.raiseProof(t, s.run, `["presence", "terminal"]`, `["presence"]`)
	if !r.Counts(approval.ProofPresence) || r.Counts(approval.ProofTerminal) {
		t.Errorf("renewal proof %v, want presence only", r.Proof)
	}
	data := s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")
	if data["policyRaised"] == nil {
		t.Errorf("refusal after the raise does not say the policy was raised: %v", data)
	}
	term := p.startTerminal(t, env, true, "term", "$MCPEPOCH_BIN approve --run "+s.run)
	if rc := term.exit(); rc == "0" || !strings.Contains(term.screen(), "counts only presence") {
		t.Fatalf("approve at a terminal after the raise: exit %s\n%s", rc, term.screen())
	}

	page := startPageCLI(t, p, env, "approve", "--web", "--no-open", "--run", s.run)
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Navigate(page.url)); err != nil {
		t.Fatal(err)
	}
	why, err := chromedp.Run(c, chromedp.Text("#renewal #renew-why"))
	if err != nil || !strings.Contains(why, "raised the approval policy") {
		t.Errorf("the page does not say why the renewal is asked: %q (%v)", why, err)
	}
	if code, _ := chromedp.Run(c, chromedp.Text("#code")); code != r.ShortCode {
		t.Errorf("page code %q, want the renewal's %s", code, r.ShortCode)
	}
	if st := click(t, ctx, page.url, "approve"); st != "ok: Approved." {
		t.Fatalf("one press on the renewal: %s", st)
	}
	if code := page.wait(t); code != 0 {
		t.Fatalf("approve --web: exit %d\n%s", code, page.stderr)
	}
	p.wantRenewalGranted(r, approval.ProofPresence)
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=2") {
		t.Errorf("slow_write on the renewed grant: %q", got)
	}
	if r := p.review(s.run).Renewal; r != nil {
		t.Errorf("the renewal is still offered once approved: %+v", r)
	}
}

// TestRenewalAfterPolicyRaisedThroughClient: a grant approved at a
// person's terminal ends when mcpepoch.toml narrows the proof to client;
// the next call is held and the client is asked for the renewal (its
// code), whose accept renews the grant with proof client and releases
// the call.
func TestRenewalAfterPolicyRaisedThroughClient(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env := newDefaultProofProject(t)
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	s := eConnect(t, p, k.options(false), "2025-11-25", env...)
	p.approveAtTerminal(t, env, s.run)
	s.text("slow_write", map[string]any{"key": "k"})

	r := p.raiseProof(t, s.run, "", `["client"]`)
	if err := wantDone(t, callAsync(s, t.Context(), "k")); err != nil {
		t.Fatalf("slow_write after the client's accept: %v", err)
	}
	if e := k.next(t); !strings.Contains(e.Message, r.ShortCode) {
		t.Errorf("elicitation %q: want the renewal's code %s", e.Message, r.ShortCode)
	}
	p.wantRenewalGranted(r, approval.ProofClient)
}

// TestRenewalAfterPolicyRaisedAtTerminal: a grant accepted in the MCP
// client ends when mcpepoch.toml narrows the proof to terminal; mcpepoch
// approve in a person's terminal offers the renewal first, saying the
// policy was raised, and one key renews it with proof terminal.
func TestRenewalAfterPolicyRaisedAtTerminal(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env := newDefaultProofProject(t)
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	s := eConnect(t, p, k.options(false), "2025-11-25", env...)
	if err := wantDone(t, callAsync(s, t.Context(), "f")); err != nil {
		t.Fatalf("call approved in the form: %v", err)
	}
	r := p.raiseProof(t, s.run, "", `["terminal"]`)
	if !r.Counts(approval.ProofTerminal) || r.Counts(approval.ProofClient) {
		t.Errorf("renewal proof %v, want terminal", r.Proof)
	}
	person := p.startTerminal(t, env, true, "person", "$MCPEPOCH_BIN approve --run "+s.run)
	person.waitScreen("y approve slow_write")
	if sc := person.screen(); !strings.Contains(sc, r.ShortCode+": mcpepoch.toml raised the approval policy on epoch "+string(r.Epoch)) {
		t.Errorf("the renewal is not offered as the raise's:\n%s", sc)
	}
	person.press("y")
	if rc := person.exit(); rc != "0" || !strings.Contains(person.screen(), "proof terminal") {
		t.Fatalf("one key on the renewal: exit %s\n%s", rc, person.screen())
	}
	p.wantRenewalGranted(r, approval.ProofTerminal)
	if got := s.text("slow_write", map[string]any{"key": "f"}); !strings.Contains(got, "count=2") {
		t.Errorf("slow_write on the renewed grant: %q", got)
	}
}

// TestRenewalAfterPolicyRaisedInDev: mcpepoch dev in a person's terminal
// builds a stricter mcpepoch.toml (proof terminal) while a grant accepted
// in the MCP client is live: the build signal's answer counts the grant
// the raise revoked, so dev offers its renewal, and one key renews it.
func TestRenewalAfterPolicyRaisedInDev(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env := newDefaultProofProject(t)
	k := newAsker(func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	s := eConnect(t, p, k.options(false), "2025-11-25", env...)
	if err := wantDone(t, callAsync(s, t.Context(), "f")); err != nil {
		t.Fatalf("call approved in the form: %v", err)
	}
	toml := p.read("mcpepoch.toml")
	p.write("toml.next", toml)
	const dev = "$MCPEPOCH_BIN dev --build 'cp toml.next mcpepoch.toml' --watch toml.next --debounce 50ms"
	term := p.startTerminal(t, env, true, "dev", dev)
	term.waitScreen("build ok")
	p.write("toml.next", strings.Replace(toml, "[grants]\n", "[grants]\nproof = [\"terminal\"]\n", 1))
	term.waitScreen("y approve slow_write")
	r := p.review(s.run).Renewal
	if r == nil || !r.PolicyRaised || !strings.Contains(term.screen(), "renewal "+r.ShortCode) {
		t.Fatalf("dev shows no renewal after the raise (host offers %+v):\n%s", r, term.screen())
	}
	term.press("y")
	term.waitScreen("approved: grant")
	p.wantRenewalGranted(r, approval.ProofTerminal)
	term.quit()
}

// TestRenewalAfterPolicyRaisedWithSSHKey: with an enrolled FIDO ssh key,
// a grant approved at a person's terminal ends when mcpepoch.toml raises
// the proof to presence; the renewal, proposed for an ssh signature as
// prepared (what approve --ssh sends with no tools named), is renewed by
// the key's signature with user presence, proof presence.
func TestRenewalAfterPolicyRaisedWithSSHKey(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p, env := newDefaultProofProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "[grants]\n", "[grants]\nproof = [\"presence\", \"terminal\"]\n", 1))
	key := softkey.NewSSHEd25519()
	a, err := trust.NewSSH(key.AuthorizedKey("test key"), "test key", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.enroll(a)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	p.approveAtTerminal(t, env, s.run)
	s.text("slow_write", map[string]any{"key": "k"})

	r := p.raiseProof(t, s.run, `["presence", "terminal"]`, `["presence"]`)
	resp, err := p.sendHost(s.run, localapi.TypeProposeSSH, r.Request(nil, ""))
	if err != nil {
		t.Fatalf("propose_ssh of the renewal: %v", err)
	}
	w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
	d, err := grant.ParseDigest(w.Digest)
	if err != nil || w.Digest != r.ID {
		t.Fatalf("propose_ssh of the renewal: digest %q (%v), want the renewal's %s", w.Digest, err, r.ID)
	}
	if _, err := p.sendHost(s.run, localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(),
		Signature: string(key.SSHSIG(sshsig.GrantNamespace, d[:], softkey.FlagUserPresent, 1))}); err != nil {
		t.Fatalf("approve_ssh of the renewal: %v", err)
	}
	p.wantRenewalGranted(r, approval.ProofPresence)
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=2") {
		t.Errorf("slow_write on the renewed grant: %q", got)
	}
}
