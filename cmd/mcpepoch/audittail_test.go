package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestAuditVerifyJunkTail: when the only problem is junk after the last
// record (more lines than a crash leaves), audit verify says the chain is
// intact up to the last record and what the junk means, never "chain
// broken", and still exits 5: the host will not write to such a log.
func TestAuditVerifyJunkTail(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	path := layout.Audit(root)
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(audit.Event{Type: audit.TypeServerStarted, Epoch: "01EPOCH", Run: "01RUN"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("{\"x\":1}\n", 100))
	f.Close()

	out, code := testenv.Run(t, root, nil, testenv.Mcpepoch(t), "audit", "verify", "--dir", root)
	if code != 5 || strings.Contains(out.Stdout, "chain broken") || !strings.Contains(out.Stdout, "chain intact up to seq 3") {
		t.Errorf("audit verify of a log with junk after its last record: exit %d\n%s", code, out)
	}
}
