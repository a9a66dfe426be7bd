package host_test

// Any program between the MCP client and the host, listed as a wrapper or
// not, leaves the agent's faked terminal refused: the host refuses an
// approver descending from any of its ancestors within its session. A
// host that leads a session of its own cannot identify its client: it
// says so at start and in status, and counts no approval as terminal.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
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

// TestApproveAgentsOwnHostFromBelowClient: an agent runs a host of its own
// that no wrapper or session ties to the real MCP client (a detached
// shell starts it, reading a FIFO the agent writes), and approves it from
// a faked terminal of its own. The approver stands below the launching
// side of the real client's host (the test process is that client): it
// proves only same-user at the agent's host too.
func TestApproveAgentsOwnHostFromBelowClient(t *testing.T) {
	needTerminalTools(t)
	t.Parallel()
	first := newGrantsProject(t, nil)
	gConnect(t, first).list()

	p, env := newDefaultProofProject(t)
	fifo := p.path("client.in")
	if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v\n%s", err, out)
	}
	detached := exec.Command("setsid", "-f", "sh", "-c", `"$MCPEPOCH_BIN" host --dir "$PWD" -- sh ./server.sh <client.in >client.out 2>host.err; exit $?`)
	detached.Dir, detached.Env = p.dir, testenv.Environ(append(env, "MCPEPOCH_BIN="+testenv.Mcpepoch(t))...)
	if err := detached.Run(); err != nil { // no output captured: the shell it leaves running would hold the pipe
		t.Fatalf("setsid -f: %v", err)
	}
	in, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until the host's shell opens it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() }) // the host reads the end of its input and exits
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the agent's host: stderr:\n%s\nstdout:\n%s", p.read("host.err"), p.read("client.out"))
		}
	})
	// The agent's client: initialize, then (once answered) initialized.
	send := func(line string) {
		if _, err := in.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	waitFor(t, waitLong, "the answer to initialize", func() bool { return strings.Contains(p.read("client.out"), `"id":1,`) })
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	waitFor(t, waitLong, "the agent's host to report its agent run", func() bool { return listeningRe.MatchString(p.read("host.err")) })
	run := listeningRe.FindStringSubmatch(p.read("host.err"))[1]
	p.ready(run)
	if st := p.statusOf(run); st.ClientUnknown != "" {
		t.Fatalf("the agent's host cannot identify its client (%s): the test needs one that can", st.ClientUnknown)
	}

	out, code := p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN `+approveArgs(run)+`" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "proves only same-user") {
		t.Fatalf("approval of the agent's own host through script -qc: exit %d\n%s", code, out)
	}
	recs := p.waitRecords("an approval_refused record", func(rs []audit.Record) bool {
		return len(filterType(rs, audit.TypeApprovalRefused)) > 0
	})
	if r := filterType(recs, audit.TypeApprovalRefused)[0]; !strings.Contains(fmt.Sprint(r.Fields["reason"]), "below another host's launch") {
		t.Errorf("approval_refused: %v, want the reason to name the other host's launch", r.Fields)
	}
	if got := filterType(recs, audit.TypeApprovalGranted); len(got) != 0 {
		t.Fatalf("approval_granted records: %v", got)
	}
}
