package host_test

import (
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestAttestationRequired: with [grants] attestation = "required", a
// presence approval by Chromium's virtual authenticator, whose batch
// certificate chains to no bundled root, is refused and the call stays
// refused; once the test build trusts that certificate as a vendor root
// (MCPEPOCH_TEST_ATTESTATION_ROOTS), authenticators says attested and a
// host started with it counts the same authenticator's approval.
func TestAttestationRequired(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "[grants]\n", "[grants]\nattestation = \"required\"\n", 1))
	if out := enrollVirtualKey(t, ctx, p, env); !strings.Contains(out, "unattested (chain of") {
		t.Fatalf("enroll --web:\n%s", out)
	}

	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	args := []string{"approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write"}
	ap := startPageCLI(t, p, env, args...)
	if st := click(t, ctx, ap.url, "approve"); !strings.Contains(st, "attestation = \"required\"") {
		t.Fatalf("approval page with an unattested authenticator: %s", st)
	}
	if code := ap.wait(t); code == 0 {
		t.Fatalf("approve --web by an unattested authenticator: exit 0\n%s", ap.stderr)
	}
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")
	s.close()

	// The test build trusts the batch certificate as a vendor root.
	roots := filepath.Join(p.dir, "roots.pem")
	os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: batchCertificate(t, p)}), 0o600)
	env = append(env, "MCPEPOCH_TEST_ATTESTATION_ROOTS="+roots)
	if out, code := p.runCLI(env, "authenticators"); code != 0 || !strings.Contains(out.Stdout, "attested (packed, CN=Batch Certificate") {
		t.Fatalf("authenticators with the root trusted: exit %d\n%s", code, out)
	}
	s = gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	args[4] = s.run
	ap = startPageCLI(t, p, env, args...)
	if st := click(t, ctx, ap.url, "approve"); st != "ok: Approved." {
		t.Fatalf("approval page with an attested authenticator: %s", st)
	}
	if code := ap.wait(t); code != 0 {
		t.Fatalf("approve --web by an attested authenticator: exit %d\n%s", code, ap.stderr)
	}
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Fatalf("slow_write after the approval: %q", got)
	}
}

// batchCertificate returns the first certificate of the root entry's
// attestation statement, as the store keeps it.
func batchCertificate(t *testing.T, p *project) []byte {
	t.Helper()
	var f struct {
		Authenticators []struct {
			Attestation *trust.Attestation `json:"attestation"`
		} `json:"authenticators"`
	}
	b, _ := os.ReadFile(filepath.Join(p.dir, "config", "mcpepoch", trust.FileName))
	if err := json.Unmarshal(b, &f); err != nil || len(f.Authenticators) == 0 || f.Authenticators[0].Attestation == nil {
		t.Fatalf("store: %v\n%s", err, b)
	}
	var ao protocol.AttestationObject
	if err := webauthncbor.Unmarshal(f.Authenticators[0].Attestation.Statement, &ao); err != nil {
		t.Fatal(err)
	}
	x5c, _ := ao.AttStatement["x5c"].([]any)
	if len(x5c) == 0 {
		t.Fatalf("attestation statement without x5c: %v", ao.AttStatement)
	}
	der, _ := x5c[0].([]byte)
	return der
}
