package host_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestAuditCutWhileHostRuns: records cut from the audit log while a host
// writes it (the log truncated, or the log and its head deleted) are not
// forgotten: the host's next record is a log_recovered naming the seqs
// cut and the head it had written, and audit verify reports the chain
// broken (exit 5) instead of intact.
func TestAuditCutWhileHostRuns(t *testing.T) {
	t.Parallel()
	for name, cut := range map[string]func(p *project){
		"truncated": func(p *project) {
			if err := os.Truncate(p.path(".mcpepoch/audit.jsonl"), 0); err != nil {
				t.Fatal(err)
			}
		},
		"log and head deleted": func(p *project) {
			for _, f := range []string{".mcpepoch/audit.jsonl", ".mcpepoch/audit.head"} {
				if err := os.Remove(p.path(f)); err != nil {
					t.Fatal(err)
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, nil)
			c := startRaw(t, p, nil)
			c.initialize()
			if r := c.callWait("version", nil); r.Error != nil {
				t.Fatalf("call: %v", r)
			}
			waitFile(t, p.path(".mcpepoch/audit.jsonl"), "tool_result")
			cut(p)
			if r := c.callWait("version", nil); r.Error != nil {
				t.Fatalf("call after the cut: %v", r)
			}
			c.stdin.Close() // the host writes what it queued, then exits
			<-c.done
			out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "audit", "verify", "--dir", p.dir)
			if code != 5 || !strings.Contains(out.Stdout, "cut from the log") || strings.Contains(out.Stdout, "chain intact") {
				t.Fatalf("audit verify after the cut: exit %d, want 5 naming the cut\n%s", code, out)
			}
		})
	}
}

// waitFile waits until the file at path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q after %s", path, want, waitLong)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
