package host_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
)

// TestGrantWithoutCredentialScope: a grant that names no credential
// scope says so in words where approve prints it, and its
// approval_granted record holds an empty list, never null.
func TestGrantWithoutCredentialScope(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[grants]\nproof = [\"same-user\"]\n") // no tool exempt, none with a credential
	s := gConnect(t, p)
	s.list()
	gid, _, out := p.approve(s.run, "--tools", "version")
	if !strings.Contains(out.Stdout, "tools version, no credential scope, until") || strings.Contains(out.Combined, "credential scope -") {
		t.Errorf("approve without a credential scope printed:\n%s", out)
	}
	var found bool
	for _, r := range p.auditRecords(audit.TypeApprovalGranted) {
		if r.Fields["grant"] != gid {
			continue
		}
		found = true
		if l, ok := r.Fields["credential_scope"].([]any); !ok || len(l) != 0 {
			t.Errorf("approval_granted of %s: credential_scope = %#v, want []", gid, r.Fields["credential_scope"])
		}
	}
	if !found {
		t.Fatalf("no approval_granted record of grant %s", gid)
	}
}
