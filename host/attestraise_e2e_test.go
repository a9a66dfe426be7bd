package host_test

import (
	"strings"
	"testing"
)

// TestAttestationRaisedRevokesUnattestedGrant: a grant approved with
// presence by Chromium's virtual authenticator, which is unattested, ends
// when [grants] attestation = "required" is written while the host runs:
// the next call is refused, saying the policy was raised, and the
// revocation is audited with reason policy_raised.
func TestAttestationRaisedRevokesUnattestedGrant(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	enrollVirtualKey(t, ctx, p, env)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	ap := startPageCLI(t, p, env, "approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write")
	if st := click(t, ctx, ap.url, "approve"); st != "ok: Approved." {
		t.Fatalf("approval page: %s", st)
	}
	if code := ap.wait(t); code != 0 {
		t.Fatalf("approve --web: exit %d\n%s", code, ap.stderr)
	}
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Fatalf("slow_write after the approval: %q", got)
	}
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "[grants]\n", "[grants]\nattestation = \"required\"\n", 1))
	p.record() // identical bytes: the epoch stays, the file is re-read
	_, err := s.call("slow_write", map[string]any{"key": "k"})
	if err == nil || !strings.Contains(err.Error(), "was revoked when mcpepoch.toml raised the approval policy") {
		t.Fatalf("slow_write after attestation was required: %v, want the grant revoked", err)
	}
	out, _ := p.runCLI(env, "audit", "show", "--json")
	if !strings.Contains(out.Stdout, `"reason":"policy_raised"`) || !strings.Contains(out.Stdout, "by an authenticator that no longer counts") {
		t.Errorf("no grant_revoked record with reason policy_raised:\n%s", out.Stdout)
	}
}
