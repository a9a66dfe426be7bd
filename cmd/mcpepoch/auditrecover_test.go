package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// TestAuditHeadDeleted: records cut from the end of the audit log and the
// head deleted; the next writer (a host starting) must leave a mark that
// audit verify warns about and audit show lists, instead of a log that
// verifies as intact.
func TestAuditHeadDeleted(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	path := layout.Audit(root)
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"read_file", "write_file", "wipe_disk"} {
		if _, err := l.Append(audit.Event{Type: audit.TypeToolCalled, Epoch: "01EPOCH", Run: "01RUN",
			Fields: map[string]any{audit.FieldTool: tool}}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(path, []byte(strings.Join(lines[:2], "")), 0o600) // the wipe_disk call is gone
	os.Remove(audit.HeadPath(path))

	if l, err = audit.Open(path, nil); err != nil { // what a host starting does
		t.Fatal(err)
	}
	l.Close()

	stdout, _, code := runCLI(t, "audit", "verify", "--dir", root)
	if code != 0 {
		t.Errorf("audit verify: exit %d, want 0 (intact, with a warning)", code)
	}
	if !strings.Contains(stdout, "warning: "+path+":3: seq 3: log_recovered: the head file was missing when the log was reopened after seq 2") {
		t.Errorf("audit verify does not warn about the missing head:\n%s", stdout)
	}
	stdout, _, code = runCLI(t, "audit", "show", "--dir", root)
	if code != 0 || !strings.Contains(stdout, "log_recovered         epoch=-              run=-              head=missing") {
		t.Errorf("audit show: exit %d, does not list the missing head:\n%s", code, stdout)
	}
}

// TestAuditLogDeleted: audit.jsonl deleted while audit.head stays is a
// broken chain (exit 5), not a file that cannot be read (exit 1).
func TestAuditLogDeleted(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	path := layout.Audit(root)
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(audit.Event{Type: audit.TypeClientConnected}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	os.Remove(path)
	stdout, _, code := runCLI(t, "audit", "verify", "--dir", root)
	if code != 5 || !strings.Contains(stdout, "log missing, but "+audit.HeadPath(path)+" records seq 1") {
		t.Errorf("audit verify: exit %d, want 5 naming the missing log:\n%s", code, stdout)
	}
}
