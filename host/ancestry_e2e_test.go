package host_test

// A host started through a wrapper (the npm launcher, sh -c) still knows
// the MCP client above it: an approval through a faked terminal that the
// client started is refused at the default proof level and audited, while
// a person's approval from a terminal session of its own counts.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// npmLauncher installs the npm launcher with a stand-in platform package
// holding the test binary, and returns its script; node_modules/.bin/
// mcpepoch beside it links to the script, as npm links it.
func npmLauncher(t *testing.T) string {
	t.Helper()
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no npm platform package for %s", runtime.GOARCH)
	}
	dir := filepath.Join(t.TempDir(), "node_modules")
	script := filepath.Join(dir, "mcpepoch", "bin", "mcpepoch.js")
	bin := filepath.Join(dir, "@mcpepoch", runtime.GOOS+"-"+arch, "bin", "mcpepoch")
	src, err := os.ReadFile(filepath.Join("..", "npm", "mcpepoch", "bin", "mcpepoch.js"))
	for _, d := range []string{filepath.Dir(script), filepath.Dir(bin)} {
		if err == nil {
			err = os.MkdirAll(d, 0o755)
		}
	}
	if err == nil {
		err = os.WriteFile(script, src, 0o755)
	}
	if err == nil {
		err = os.Symlink(testenv.Mcpepoch(t), bin)
	}
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, ".bin"), 0o755)
	}
	if err == nil {
		err = os.Symlink(filepath.Join("..", "mcpepoch", "bin", "mcpepoch.js"), filepath.Join(dir, ".bin", "mcpepoch"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// gConnectVia is gConnect with the host started by the command prefix,
// given the host's arguments.
func gConnectVia(t *testing.T, p *project, prefix []string, env ...string) *gSession {
	t.Helper()
	argv := append(append([]string(nil), prefix...), p.hostArgs(nil)...)
	cmd := p.command(argv[0], argv[1:]...)
	cmd.Env = testenv.Environ(env...)
	s := &gSession{t: t, cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = s.stderr
	s.cs = connectGo(t, cmd, s.stderr, nil, "")
	t.Cleanup(s.close)
	waitFor(t, waitLong, "the host to report its agent run", func() bool { return listeningRe.MatchString(s.stderr.String()) })
	s.run = listeningRe.FindStringSubmatch(s.stderr.String())[1]
	return s
}

func TestApproveThroughWrapper(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	testenv.LookNode(t)
	for _, c := range []struct {
		name   string
		prefix []string
	}{
		{"npm launcher", []string{"node", npmLauncher(t)}},
		{"sh -c", []string{"sh", "-c", `"$@"; exit $?`, "sh", testenv.Mcpepoch(t)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, env := newDefaultProofProject(t)
			s := gConnectVia(t, p, c.prefix, env...)
			s.list()
			p.ready(s.run)

			// The agent: a faked terminal started by the MCP client (this test).
			out, code := p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN `+approveArgs(s.run)+`" /dev/null`)
			if code == 0 || !strings.Contains(out.Combined, "descends from the MCP client that launched this host") {
				t.Fatalf("approval through script -qc: exit %d\n%s", code, out)
			}
			wantApprovalRefused(t, p, s, 1, "descends from the MCP client")

			// A person: a terminal session that does not descend from the client.
			p.approveAtTerminal(t, env, s.run)
			recs := p.waitRecords("approval_granted", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalGranted)) == 1 })
			if f := filterType(recs, audit.TypeApprovalGranted)[0].Fields; f["proof"] != string(approval.ProofTerminal) {
				t.Errorf("approval_granted: %v, want proof terminal", f)
			}
			// The client named is this test, above the wrapper.
			client := fmt.Sprintf("launched this host (pid %d)", os.Getpid())
			if r := filterType(recs, audit.TypeApprovalRefused)[0]; !strings.Contains(fmt.Sprint(r.Fields["reason"]), client) {
				t.Errorf("approval_refused reason %q, want it to name %q", r.Fields["reason"], client)
			}
			s.text("slow_write", map[string]any{"key": "k", "delayMs": 0})
		})
	}
}
