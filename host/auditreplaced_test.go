package host_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// The live audit log replaced by a symbolic link to /dev/null: no call
// runs without its record. The next call is refused (audit_unavailable),
// the fixture's counter shows it never ran, and status says why.
func TestAuditLogReplacedWhileOpen(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("slow_write", map[string]any{"key": "k"}), "count=1 revision=A")

	log := layout.Audit(p.dir)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", log); err != nil {
		t.Fatal(err)
	}
	r := c.callWait("slow_write", map[string]any{"key": "k"})
	wantError(t, r, host.CodeAuditUnavailable, "audit_unavailable:")
	wantNext(t, r, "mcpepoch status shows the cause")
	if got := strings.TrimSpace(p.read("counter/k.count")); got != "1" {
		t.Errorf("counter after the refused call: %q, want 1 (it must not run)", got)
	}
	if s := p.status(); !strings.Contains(s.AuditUnavailable, "audit log cannot be written") {
		t.Errorf("status auditUnavailable %q, want why the audit log cannot be written", s.AuditUnavailable)
	}
}
