package host_test

// Any program between the MCP client and the host, listed as a wrapper or
// not, leaves the agent's faked terminal refused: the host refuses an
// approver descending from any of its ancestors within its session. A
// host that leads a session of its own cannot identify its client: it
// says so at start and in status, and counts no approval as terminal.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

func TestApproveThroughUnlistedWrapperRefused(t *testing.T) {
	needTerminalTools(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "launch.sh")
	if err := os.WriteFile(script, []byte("\"$@\"\nexit $?\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, tool, install string
		prefix              []string
	}{
		{"sh script", "sh", "install a POSIX shell (apt-get install dash)", []string{"sh", script}},
		{"flock", "flock", testenv.InstallUtilLinux, []string{"flock", filepath.Join(dir, "lock")}},
		{"env in sh script", "env", testenv.InstallCoreutils, []string{"sh", script, "env", "A=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.Need(t, c.tool, c.install)
			t.Parallel()
			p, env := newDefaultProofProject(t)
			s := gConnectVia(t, p, append(c.prefix, testenv.Mcpepoch(t)), env...)
			s.list()
			p.ready(s.run)

			// The agent: a faked terminal started by the MCP client (this test).
			out, code := p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN `+approveArgs(s.run)+`" /dev/null`)
			if code == 0 || !strings.Contains(out.Combined, "proves only same-user") {
				t.Fatalf("approval through script -qc with the host under %s: exit %d\n%s", c.name, code, out)
			}
			wantApprovalRefused(t, p, s, 1, "descends from")
			if st := p.statusOf(s.run); st.ClientUnknown != "" {
				t.Errorf("status clientUnknown %q, want the client identified", st.ClientUnknown)
			}
		})
	}
}

func TestHostLeadingItsSessionCountsNoTerminal(t *testing.T) {
	needTerminalTools(t)
	t.Parallel()
	p, env := newDefaultProofProject(t)
	s := gConnectVia(t, p, []string{"setsid", "-w", testenv.Mcpepoch(t)}, env...)
	s.list()
	p.ready(s.run)
	if !strings.Contains(s.stderr.String(), "cannot identify its MCP client") {
		t.Errorf("host stderr does not say it cannot identify its client:\n%s", s.stderr)
	}
	if st := p.statusOf(s.run); !strings.Contains(st.ClientUnknown, "leads a session of its own") {
		t.Errorf("status clientUnknown %q, want why the client is unknown", st.ClientUnknown)
	}
	// Even a person's own terminal session proves only same-user here.
	term := p.startTerminal(t, env, true, "person", "$MCPEPOCH_BIN "+approveArgs(s.run))
	term.waitScreen("[y/N]")
	term.press("y\n")
	if rc := term.exit(); rc == "0" {
		t.Fatalf("approval counted under a host that cannot identify its client:\n%s", term.screen())
	}
	wantApprovalRefused(t, p, s, 1, "cannot identify its MCP client")
}
