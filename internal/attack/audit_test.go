package attack_test

import (
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// stateCopy is the shell expression of the copy of the audit head that
// hosts keep outside the project, as the agent finds it: in the user's
// state directory, named by the SHA-256 of the project root.
const stateCopy = `"$XDG_STATE_HOME/mcpepoch/$(printf %s "$PWD" | sha256sum | cut -c1-64)/audit.head"`

// TestAuditRewritten: while no host runs, the agent cuts the audit log's
// last record and chains the rest anew, rewriting the head in the
// project: the log verifies against itself. Confined, it cannot touch the
// copy of the head in the user's state directory (read-only in the
// sandbox), and mcpepoch audit verify exits 5, naming the copy.
// Unconfined, it rewrites the copy too, and verify exits 0: the limit the
// docs name (ship the log elsewhere to keep more).
func TestAuditRewritten(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "sha256sum", testenv.InstallCoreutils)
	for _, where := range []confinement{confined, unconfined} {
		t.Run(where.String(), func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			s := connect(t, p, nil)
			s.text("env", nil) // records of a call: tool_called, tool_result
			s.close()
			if out, code := p.cli(nil, "audit", "verify"); code != 0 {
				t.Fatalf("audit verify before the rewrite: exit %d\n%s", code, out)
			}
			a := newAgent(t, where, p.dir)
			a.must(`"$AGENT_TOOL" rechain .mcpepoch/audit.jsonl`)
			out, code := a.run(`cp .mcpepoch/audit.head ` + stateCopy)
			if where == unconfined {
				if code != 0 {
					t.Fatalf("the unconfined agent could not rewrite the copy of the head:\n%s", out)
				}
				if vout, vcode := p.cli(nil, "audit", "verify"); vcode != 0 {
					t.Fatalf("audit verify after the unconfined agent rewrote the log and both heads: exit %d, want 0 (the limit the docs name)\n%s", vcode, vout)
				}
				return
			}
			if code == 0 {
				t.Fatalf("the confined agent rewrote the copy of the head:\n%s", out)
			}
			wantIn(t, "the confined agent's cp", out.Combined, "Read-only file system")
			vout, vcode := p.cli(nil, "audit", "verify")
			if vcode != 5 {
				t.Fatalf("audit verify after the confined agent rewrote the log and its head: exit %d, want 5\n%s", vcode, vout)
			}
			wantIn(t, "audit verify", vout.Combined, "the copy of its head kept outside the project", "rewritten")
		})
	}
}
