package host_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestAuditCutWhileHostRuns: records cut from the audit log while a host
// writes it (the log truncated, a line deleted from it in place, or the
// log and its head deleted) are not forgotten and stop calls: the next
// call is refused with audit_unavailable naming the cut and never runs,
// its record not written; the log's next record is a log_recovered
// naming what is gone and the head the host had written; calls run again
// once a write succeeds; and audit verify reports the chain broken
// (exit 5) instead of intact.
func TestAuditCutWhileHostRuns(t *testing.T) {
	t.Parallel()
	for name, cut := range map[string]func(p *project){
		"truncated": func(p *project) {
			if err := os.Truncate(p.path(".mcpepoch/audit.jsonl"), 0); err != nil {
				t.Fatal(err)
			}
		},
		"line deleted in place": func(p *project) {
			b, err := os.ReadFile(p.path(".mcpepoch/audit.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(b), "\n")
			kept := strings.Join(append(lines[:1:1], lines[2:]...), "")
			if err := os.WriteFile(p.path(".mcpepoch/audit.jsonl"), []byte(kept), 0o600); err != nil {
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
			p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
			c := startRaw(t, p, nil)
			c.initialize()
			wantText(t, c.callWait("slow_write", map[string]any{"key": "before"}), "count=1")
			waitFile(t, p.path(".mcpepoch/audit.jsonl"), "tool_result")
			cut(p)
			r := c.callWait("slow_write", map[string]any{"key": "refused"})
			wantError(t, r, host.CodeAuditUnavailable, "audit_unavailable:")
			if !strings.Contains(string(r.Error.Data), "gone from the log") {
				t.Errorf("error data %s: want the cut named", r.Error.Data)
			}
			if _, started := p.counts("refused"); started != "" {
				t.Errorf("the call refused after the cut ran: %q", started)
			}
			deadline := time.Now().Add(waitLong)
			for r := c.callWait("version", nil); r.Error != nil; r = c.callWait("version", nil) {
				if time.Now().After(deadline) {
					t.Fatalf("calls still refused %s after the cut: %v", waitLong, r)
				}
				time.Sleep(50 * time.Millisecond)
			}
			c.stdin.Close() // the host writes what it queued, then exits
			<-c.done
			if !strings.Contains(c.stderr.String(), "gone from the log") || !strings.Contains(c.stderr.String(), "the records cut from it are gone") {
				t.Errorf("host stderr does not name the cut:\n%s", c.stderr.String())
			}
			log := p.read(".mcpepoch/audit.jsonl")
			if strings.Contains(log, `"refused"`) || !strings.Contains(log, `"type":"log_recovered"`) {
				t.Errorf("log after the cut: want a log_recovered record and no record of the refused call:\n%s", log)
			}
			out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), "audit", "verify", "--dir", p.dir)
			if code != 5 || !strings.Contains(out.Stdout, "while it was open") || strings.Contains(out.Stdout, "chain intact") {
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
