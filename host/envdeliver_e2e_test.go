package host_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// envProject is a credserver project with one deliver = "env" scope, api,
// as API_TOKEN, whose server.sh appends a line per launch to
// counter/launches: "rev=R api=none", or "rev=R api=<12 hex of the
// value's SHA-256>" (never the value).
type envProject struct {
	*project
	secret string // the source file
}

const envSecret = "env-delivered-3f9a61c2"

func newEnvProject(t *testing.T) *envProject {
	t.Helper()
	p := &envProject{project: newProject(t, nil), secret: filepath.Join(t.TempDir(), "api.token")}
	copyFile(t, buildServer(t, "host/testdata/credserver"), p.path("bin/credserver"))
	if err := os.WriteFile(p.secret, []byte(envSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.write("mcpepoch.toml", fmt.Sprintf(`label = "env-test"
command = ["sh", "./server.sh"]

[grants]
exempt = ["env"]
proof = ["same-user"]

[credentials.api]
tools = ["plain"]
file = %q
deliver = "env"
as = "API_TOKEN"
`, p.secret))
	p.revision("A")
	return p
}

// revision rewrites server.sh for revision rev, as a build would.
func (p *envProject) revision(rev string) {
	p.write("server.sh", `#!/bin/sh
if [ -n "${API_TOKEN+set}" ]; then
	echo "rev=`+rev+` api=$(printf %s "$API_TOKEN" | sha256sum | cut -c1-12)" >> counter/launches
else
	echo "rev=`+rev+` api=none" >> counter/launches
fi
export CRED_REV='`+rev+`'
exec ./bin/credserver
`)
}

// launches returns the lines of counter/launches once there are n.
func (p *envProject) launches(n int) []string {
	p.t.Helper()
	var lines []string
	waitFor(p.t, waitLong, fmt.Sprintf("launch %d", n), func() bool {
		b, _ := os.ReadFile(p.path("counter/launches"))
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(b) > 0 && len(lines) >= n
	})
	return lines
}

func hashed(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])[:12]
}

// deliver = "env": the process launched before approval lacks the
// variable, even when the host itself inherited one of that name; the
// approval starts it again, same epoch, with it; after a rebuild the new
// epoch's process lacks it until approved again.
func TestEnvDeliveryFollowsApproval(t *testing.T) {
	t.Parallel()
	p := newEnvProject(t)
	s := gConnect(t, p.project, "API_TOKEN=from-the-client-config")
	if got := p.launches(1); got[0] != "rev=A api=none" {
		t.Fatalf("launch before approval: %q, want no API_TOKEN", got[0])
	}
	before := p.status()

	p.cli("approve", "--yes", "--all")
	want := "rev=A api=" + hashed(envSecret)
	if got := p.launches(2); len(got) != 2 || got[1] != want {
		t.Fatalf("launches after approval: %q, want a second with %s", got, want)
	}
	after := p.waitState(host.StateReady, waitLong)
	if after.Execution.Epoch != before.Execution.Epoch || after.Execution.ProcessID == before.Execution.ProcessID {
		t.Errorf("after the approval: epoch %s pid %d, want epoch %s in a new process (was pid %d)",
			after.Execution.Epoch, after.Execution.ProcessID, before.Execution.Epoch, before.Execution.ProcessID)
	}
	s.text("plain", nil) // the grant still covers the epoch's tools

	p.revision("B")
	p.record()
	if got := p.launches(3); len(got) != 3 || got[2] != "rev=B api=none" {
		t.Fatalf("launches after the rebuild: %q, want a third without API_TOKEN", got)
	}
	p.cli("approve", "--yes", "--all")
	if got := p.launches(4); len(got) != 4 || got[3] != "rev=B api="+hashed(envSecret) {
		t.Fatalf("launches after the second approval: %q", got)
	}

	var issued int
	for _, r := range p.records() {
		if r.Type == audit.TypeCredentialIssued && r.Fields["delivery"] == "env" {
			issued++
		}
	}
	if issued != 2 {
		t.Errorf("%d credential_issued records with delivery env, want 2", issued)
	}
	filepath.WalkDir(p.path(".mcpepoch"), func(path string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(path); err == nil && !d.IsDir() && strings.Contains(string(b), envSecret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if strings.Contains(s.stderr.String(), envSecret) {
		t.Error("the host's stderr holds the secret")
	}
}
