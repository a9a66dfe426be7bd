package grant

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenProposal is the proposal whose canonical bytes and digest are
// pinned in testdata/proposal.golden: a change to either means every
// signature made before it no longer verifies, so it needs a new
// ProposalVersion, not a new golden file.
func goldenProposal() *Proposal {
	return &Proposal{
		V:               1,
		AgentRun:        "01JQ7R2B7Y9V3K5M8N0P4Q6R1S",
		ExecutionEpoch:  "01JQ7R9KQ6K2Y8W4JH0M5N7P3R",
		CatalogRevision: "sha256:5f2b0c7d",
		ToolScope:       []string{"inventory_adjust", "inventory_lookup"},
		CredentialScope: []string{"warehouse-db"},
		ExpiresWhen:     "30m",
		Nonce:           "000102030405060708090a0b0c0d0e0f",
		AuditHead:       AuditHead{Seq: 3, Hash: "sha256:8235acb55eb91991b1f88ffab26676f502f330ff27e33e3605cf6a5ab0ce196b"},
	}
}

func TestProposalGolden(t *testing.T) {
	p := goldenProposal()
	canon, err := p.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	got := string(canon) + "\n" + d.String() + "\n" + d.ShortCode() + "\n"
	path := filepath.Join("testdata", "proposal.golden")
	if os.Getenv("MCPEPOCH_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("canonical form, digest or short code changed:\n got %s\nwant %s", got, want)
	}
	// RFC 8785: members sorted by name, no whitespace.
	if !bytes.HasPrefix(canon, []byte(`{"agentRun":`)) || bytes.ContainsAny(canon, " \n") {
		t.Errorf("not canonical: %s", canon)
	}
}

// TestDigestCoversEveryMember: changing any one member changes the digest.
func TestDigestCoversEveryMember(t *testing.T) {
	base, _ := goldenProposal().Digest()
	edits := map[string]func(*Proposal){
		"agentRun":        func(p *Proposal) { p.AgentRun = "01JQ7R2B7Y9V3K5M8N0P4Q6R1T" },
		"executionEpoch":  func(p *Proposal) { p.ExecutionEpoch = "01JQ7R9KQ6K2Y8W4JH0M5N7P3S" },
		"catalogRevision": func(p *Proposal) { p.CatalogRevision = "sha256:5f2b0c7e" },
		"toolScope":       func(p *Proposal) { p.ToolScope = []string{"inventory_adjust"} },
		"credentialScope": func(p *Proposal) { p.CredentialScope = []string{} },
		"expiresWhen":     func(p *Proposal) { p.ExpiresWhen = ExpiresPerCall },
		"nonce":           func(p *Proposal) { p.Nonce = NewNonce() },
		"auditHead.seq":   func(p *Proposal) { p.AuditHead.Seq = 4 },
		"auditHead.hash": func(p *Proposal) {
			p.AuditHead.Hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		},
	}
	for name, edit := range edits {
		p := goldenProposal()
		edit(p)
		d, err := p.Digest()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d == base {
			t.Errorf("changing %s left the digest as it was", name)
		}
	}
}

func TestProposalCheckNamesTheMember(t *testing.T) {
	cases := map[string]func(*Proposal){
		`"v"`:                    func(p *Proposal) { p.V = 2 },
		`"agentRun"`:             func(p *Proposal) { p.AgentRun = "" },
		`"executionEpoch"`:       func(p *Proposal) { p.ExecutionEpoch = "e1" },
		`"catalogRevision"`:      func(p *Proposal) { p.CatalogRevision = "" },
		`"toolScope" empty`:      func(p *Proposal) { p.ToolScope = nil },
		`"toolScope": want`:      func(p *Proposal) { p.ToolScope = []string{"b", "a"} },
		`"toolScope": entry`:     func(p *Proposal) { p.ToolScope = []string{""} },
		`"credentialScope" null`: func(p *Proposal) { p.CredentialScope = nil },
		`"credentialScope": want`: func(p *Proposal) {
			p.CredentialScope = []string{"x", "x"}
		},
		`"expiresWhen"`:    func(p *Proposal) { p.ExpiresWhen = "soon" },
		`"nonce"`:          func(p *Proposal) { p.Nonce = "00" },
		`"auditHead.seq"`:  func(p *Proposal) { p.AuditHead.Seq = -1 },
		`"auditHead.hash"`: func(p *Proposal) { p.AuditHead.Hash = "sha256:AB" },
	}
	for want, edit := range cases {
		p := goldenProposal()
		edit(p)
		_, err := p.Digest()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
}

func TestParseDigestRoundTrip(t *testing.T) {
	d, _ := goldenProposal().Digest()
	back, err := ParseDigest(d.String())
	if err != nil || back != d {
		t.Fatalf("ParseDigest(%s) = %v, %v", d, back, err)
	}
	for _, bad := range []string{"", "sha256:", "sha1:" + strings.Repeat("0", 64), "sha256:" + strings.Repeat("A", 64)} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) succeeded", bad)
		}
	}
}

func TestShortCodeShape(t *testing.T) {
	d, _ := goldenProposal().Digest()
	c := d.ShortCode()
	if len(c) != 9 || c[4] != '-' || strings.ContainsAny(c, "ILOU") {
		t.Fatalf("short code %q: want XXXX-XXXX in Crockford base32", c)
	}
	if a, b := NewNonce(), NewNonce(); a == b {
		t.Fatal("two nonces alike")
	}
}
