package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// A key signs only the grant the person asked for: whatever answers
// propose_ssh on the host's socket (a relay an agent put there) cannot
// widen the tools or scopes, move the epoch, or name a digest that is
// not its proposal's.
func TestProposedAsAsked(t *testing.T) {
	t.Parallel()
	rv := localapi.Review{AgentRun: epoch.RunID("01JQ7R2000000000000000000A"), Epoch: epoch.Epoch("01JQ7R9000000000000000000B"),
		CatalogRevision: localapi.Revision("sha256:" + strings.Repeat("c", 64)),
		Tools:           []json.RawMessage{json.RawMessage(`{"name":"ping"}`), json.RawMessage(`{"name":"read"}`)}}
	req := localapi.ApproveRequest{Epoch: rv.Epoch, Catalog: rv.CatalogRevision, Tools: []string{"ping"}, Expires: "30m"}
	proposal := func(edit func(*grant.Proposal)) localapi.WebApproval {
		p := &grant.Proposal{V: grant.ProposalVersion, AgentRun: string(rv.AgentRun), ExecutionEpoch: rv.Epoch,
			CatalogRevision: string(rv.CatalogRevision), ToolScope: []string{"ping"}, CredentialScope: []string{},
			ExpiresWhen: "30m", Nonce: grant.NewNonce(), AuditHead: grant.AuditHead{Seq: 1, Hash: "sha256:" + strings.Repeat("0", 64)}}
		edit(p)
		d, err := p.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return localapi.WebApproval{Digest: d.String(), ShortCode: d.ShortCode(), Proposal: p}
	}
	if _, err := proposedAsAsked(rv, req, proposal(func(*grant.Proposal) {})); err != nil {
		t.Fatalf("the grant asked for: %v", err)
	}
	for name, w := range map[string]localapi.WebApproval{
		"a tool more":     proposal(func(p *grant.Proposal) { p.ToolScope = []string{"ping", "read"} }),
		"a scope more":    proposal(func(p *grant.Proposal) { p.CredentialScope = []string{"payments"} }),
		"another epoch":   proposal(func(p *grant.Proposal) { p.ExecutionEpoch = "01JQ7R9000000000000000000C" }),
		"a longer expiry": proposal(func(p *grant.Proposal) { p.ExpiresWhen = "agent-run-ends" }),
		"no proposal":     {Digest: proposal(func(*grant.Proposal) {}).Digest},
		"another digest": func() localapi.WebApproval {
			w := proposal(func(*grant.Proposal) {})
			w.Digest = "sha256:" + strings.Repeat("d", 64)
			return w
		}(),
	} {
		if _, err := proposedAsAsked(rv, req, w); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	// --all: tools of the review's catalog only.
	all := localapi.ApproveRequest{Epoch: rv.Epoch, Catalog: rv.CatalogRevision, All: true, Expires: "30m"}
	if _, err := proposedAsAsked(rv, all, proposal(func(p *grant.Proposal) { p.ToolScope = []string{"ping", "read"} })); err != nil {
		t.Errorf("--all, the catalog's tools: %v", err)
	}
	if _, err := proposedAsAsked(rv, all, proposal(func(p *grant.Proposal) { p.ToolScope = []string{"ping", "shell"} })); err == nil {
		t.Error("--all, a tool the review does not list: signed")
	}
}
