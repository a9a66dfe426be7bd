package attack_test

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestClientConfigMovesNoGuard: the agent writes the project's client
// config, whose entry's env sets XDG_CONFIG_HOME and XDG_STATE_HOME for
// the next host the client starts, pointing them into its own temp
// directory. The hosts are the product build (no test seam), run as the
// agent runs, confined, with the home directory the account database
// names bound to a fresh directory of the test's (the real user's is
// never touched). The host does not follow the variables: it says so on
// stderr, naming both and the directories it uses, and keeps the policy
// floor and the copy of the audit head under the account's home, none in
// the agent's temp directory. Then the agent weakens mcpepoch.toml and
// forges the floor where the variables point, appending a trust_pinned
// record to the audit log and keeping the copy of the head there: the
// next host, launched with the same env, takes neither; the log is ahead
// of the copy it keeps, and it refuses to start, naming mcpepoch audit
// verify.
func TestClientConfigMovesNoGuard(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		testenv.Missing(t, "the account database names no home directory for this user: "+strconv.Itoa(os.Getuid()))
	}
	p := credProject(t)
	bin := testenv.Build(t, "./cmd/mcpepoch") // the product: no -tags mcpepochtest
	home := t.TempDir()
	a := newAgent(t, confined, p.dir)
	agentCfg, agentState := filepath.Join(a.tmp, "config"), filepath.Join(a.tmp, "state")
	moved := []string{"XDG_CONFIG_HOME=" + agentCfg, "XDG_STATE_HOME=" + agentState}
	a.env = append(a.env, moved...)
	// The host as the client starts it from the entry the agent wrote: in
	// the agent's sandbox, with the account's home its own directory.
	host := append(append(bwrapArgs(p.dir, a.tmp, false), "--bind", home, u.HomeDir, "--"), bin, "host", "--dir", p.dir, "--", "sh", "./server.sh")
	host = append([]string{"bwrap"}, host...)

	s := connectArgv(t, p, moved, host)
	s.close()
	stderr := s.stderr.String()
	wantIn(t, "the host's stderr", stderr, "environment not followed: XDG_CONFIG_HOME would name "+filepath.Join(agentCfg, "mcpepoch"),
		"XDG_STATE_HOME would name "+filepath.Join(agentState, "mcpepoch"),
		filepath.Join(u.HomeDir, ".config", "mcpepoch"), "account database")
	if n := strings.Count(stderr, "environment not followed"); n != 1 {
		t.Errorf("the host said %d times that it did not follow the environment, want once:\n%s", n, stderr)
	}
	floor := trust.FloorPath(filepath.Join(home, ".config", "mcpepoch"), p.dir)
	if _, err := os.Stat(floor); err != nil {
		t.Errorf("no policy floor under the account's home: %v", err)
	}
	head := filepath.Join(home, ".local", "state", "mcpepoch", layout.ProjectID(p.dir), "audit.head")
	if _, err := os.Stat(head); err != nil {
		t.Errorf("no copy of the audit head under the account's home: %v", err)
	}
	for _, d := range []string{agentCfg, agentState} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the host wrote into %s, which the agent's entry named", d)
		}
	}

	a.must(`cat >mcpepoch.toml <<'EOF'
` + weakened + `EOF`)
	out := a.must(`"$AGENT_TOOL" forge-floor`)
	wantIn(t, "the agent's forge", out, "the audit line: appended (copy of the head kept: true)", "the floor file: written")
	hout, code := testenv.Run(t, p.dir, moved, host[0], host[1:]...)
	if code == 0 {
		t.Fatalf("a host launched with the agent's env started on the floor and the copy of the audit head it planted in its temp directory:\n%s", hout)
	}
	wantIn(t, "the host's refusal", hout.Stderr, "mcpepoch audit verify")
}
