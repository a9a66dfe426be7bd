package host_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// TestRedefinedToolNotCoveredByEarlierGrant: a grant covers the definitions
// the person reviewed. The server redefines slow_write in the same process
// (its own list_changed); once the host and the client have the new
// catalog, the grant made before no longer covers slow_write, the refusal
// says the definition changed since approval, the next review shows what
// changed, and a new approval covers it.
func TestRedefinedToolNotCoveredByEarlierGrant(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, map[string]string{"FIXTURE_REDEFINE": "1"})
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `exempt = ["version"]`, `exempt = ["version", "redefine"]`, 1))
	s := gConnect(t, p)
	s.list()
	before := p.ready(s.run)
	id, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Fatalf("slow_write under the grant: %q", got)
	}

	if got := s.text("redefine", nil); !strings.Contains(got, "redefined") {
		t.Fatalf("redefine: %q", got)
	}
	waitFor(t, waitLong, "the host to re-list the catalog", func() bool { return p.statusOf(s.run).Catalog != before.Catalog })
	if st := p.statusOf(s.run); st.Execution.Epoch != before.Execution.Epoch {
		t.Fatalf("epoch changed (%s → %s): the redefinition must happen within one epoch", before.Execution.Epoch, st.Execution.Epoch)
	}
	s.list()
	data := s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired,
		"authorization_required: the tool's definition changed since approval")
	if data["definitionChanged"] != true || data["grant"] != id || data["approvedDefinition"] == data["currentDefinition"] {
		t.Errorf("error data %v: want definitionChanged, the grant %s and both definitions", data, id)
	}
	if c, _ := p.counts("k"); strings.TrimSpace(c) != "1" {
		t.Fatalf("the redefined slow_write ran under the old grant: count %q", c)
	}
	p.waitRecords("authorization_denied definition_changed", func(rs []audit.Record) bool {
		for _, r := range filterType(rs, audit.TypeAuthorizationDenied) {
			if r.Fields["reason"] == "definition_changed" {
				return true
			}
		}
		return false
	})

	_, _, out := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if !strings.Contains(out.Stdout, "changes since the last approval") || !strings.Contains(out.Stdout, "slow_write") {
		t.Errorf("the review after the redefinition does not show what changed:\n%s", out.Stdout)
	}
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=2") {
		t.Fatalf("slow_write after the new approval: %q", got)
	}
}
