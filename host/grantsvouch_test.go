package host_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// TestGrantsListedLiveOnlyWhenHostVouches: mcpepoch grants reads the
// grants files, but shows a grant as live only when its host holds the
// same grant live. A hand-edited file (a widened tool scope) or one
// rolled back to before a revocation shows nothing live that the host
// would not apply.
func TestGrantsListedLiveOnlyWhenHostVouches(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	id, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if g := p.grant(id); g.RevokedReason != "" {
		t.Fatalf("grant %s just approved: revoked (%s), want live", id, g.RevokedReason)
	}
	file := layout.GrantStore(p.dir, epoch.RunID(s.run))
	approved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	// Hand-edited: the file now claims a wider scope than the person approved.
	edited := strings.Replace(string(approved), `"slow_write"`, `"slow_write", "publish_preview"`, 1)
	if edited == string(approved) {
		t.Fatalf("grants file has no \"slow_write\" to widen:\n%s", approved)
	}
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if g := p.grant(id); g.RevokedReason != "not_held_by_host" {
		t.Errorf("hand-edited grant %s listed with revocation %q, want not_held_by_host", id, g.RevokedReason)
	}

	// Rolled back: revoked at the host, the file restored to before.
	if err := os.WriteFile(file, approved, 0o600); err != nil {
		t.Fatal(err)
	}
	p.cli("revoke", id)
	if err := os.WriteFile(file, approved, 0o600); err != nil {
		t.Fatal(err)
	}
	if g := p.grant(id); g.RevokedReason != "not_held_by_host" {
		t.Errorf("rolled-back grant %s listed with revocation %q, want not_held_by_host", id, g.RevokedReason)
	}
	if out := p.cli("grants", "--live"); strings.Contains(out.Stdout, id) {
		t.Errorf("grants --live lists the rolled-back grant %s:\n%s", id, out.Stdout)
	}
}
