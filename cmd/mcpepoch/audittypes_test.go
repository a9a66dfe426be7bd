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

// TestAuditShowEveryType: a log holding one record of every type a host
// writes; mcpepoch audit show --type T accepts each type the audit package
// declares and shows that record, and docs/audit.md's list of events names
// every type.
func TestAuditShowEveryType(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	path := layout.Audit(root)
	os.MkdirAll(filepath.Dir(path), 0o700)
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, typ := range audit.Types() {
		if typ == audit.TypeLogRecovered || typ == audit.TypeRecordsLost {
			continue // written by the log itself
		}
		if _, err := l.Append(audit.Event{Type: typ, Epoch: "01EPOCH", Run: "01RUN"}); err != nil {
			t.Fatal(err)
		}
		written[typ] = true
	}
	l.Close()

	bin := testenv.Mcpepoch(t)
	for _, typ := range audit.Types() {
		out, code := testenv.Run(t, root, nil, bin, "audit", "show", "--type", typ, "--json")
		if code != 0 {
			t.Errorf("audit show --type %s: exit %d\n%s", typ, code, out.Stderr)
			continue
		}
		want := 0
		if written[typ] {
			want = 1
		}
		if n := strings.Count(out.Stdout, `"type":"`+typ+`"`); n != want {
			t.Errorf("audit show --type %s: %d records of the type, want %d:\n%s", typ, n, want, out.Stdout)
		}
	}

	// A list of types, comma-separated and with the flag repeated, shows
	// the records of every type named.
	out, code := testenv.Run(t, root, nil, bin, "audit", "show", "--type", audit.TypeServerStarted+","+audit.TypeToolCalled, "--type", audit.TypeToolResult, "--json")
	if n := strings.Count(out.Stdout, "\n"); code != 0 || n != 3 {
		t.Errorf("audit show with three types: exit %d, %d records, want 3:\n%s", code, n, out)
	}

	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "audit.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range audit.Types() {
		if !strings.Contains(string(doc), "`"+typ+"`") {
			t.Errorf("docs/audit.md does not name `%s`", typ)
		}
	}
}

// TestAuditVerifyNoBuildsLog: verifying the builds log of a project whose
// builds all reached a host (so record never wrote one) says so and
// exits 0, not an open error.
func TestAuditVerifyNoBuildsLog(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	stdout, stderr, code := runCLI(t, "audit", "verify", "--log", layout.Builds(root))
	if code != 0 || !strings.Contains(stdout, "no builds log at "+layout.Builds(root)+": every build so far reached a host") {
		t.Errorf("audit verify --log of a builds log never written: exit %d\n%s%s", code, stdout, stderr)
	}
}
