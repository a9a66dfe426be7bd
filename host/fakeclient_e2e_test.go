package host_test

// An accept in the MCP client counts as a person's only for a client that
// stands apart from the other hosts' sessions: an agent that runs a host
// of its own with a fake client answering the form proves same-user.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// approveForm answers every elicitation by accepting the form.
func approveForm(*mcp.ElicitParams) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
}

// TestElicitFormFromAnotherHostsSession: the test process is the MCP
// client of a running host; a second host, started on another project by
// a process that the first host's client started (here sh running a
// script, standing for an agent's own program), asks its client by form.
// The accept is refused as same-user and audited; a host the same client
// runs side by side still counts its client's accept.
func TestElicitFormFromAnotherHostsSession(t *testing.T) {
	t.Parallel()
	client := func(p *project) {
		p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"client\"]\napproval_wait = \"30s\"", 1))
	}
	first := newGrantsProject(t, nil)
	client(first)
	eConnect(t, first, newAsker(approveForm).options(false), "2025-11-25")

	t.Run("agent's own host", func(t *testing.T) {
		t.Parallel()
		p := newGrantsProject(t, nil)
		client(p)
		script := filepath.Join(t.TempDir(), "fake-client.sh")
		if err := os.WriteFile(script, []byte("\"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := p.command("sh", append([]string{script, testenv.Mcpepoch(t)}, p.hostArgs(nil)...)...)
		s := eConnectCmd(t, p, cmd, newAsker(approveForm).options(false), "2025-11-25")
		wantHeldRefusal(t, wantDone(t, callAsync(s, t.Context(), "f")), "failed")
		if gs := p.grants(); len(gs) != 0 {
			t.Fatalf("grants after a fake client's accept: %+v", gs)
		}
		refused := p.auditRecords("approval_refused")
		if len(refused) != 1 || refused[0].Fields["proof"] != "same-user" ||
			!strings.Contains(refused[0].Fields["reason"].(string), "another host's session") {
			t.Fatalf("approval_refused records: %+v, want one of proof same-user naming the other host's session", refused)
		}
	})
	t.Run("side by side", func(t *testing.T) {
		t.Parallel()
		p := newGrantsProject(t, nil)
		client(p)
		s := eConnect(t, p, newAsker(approveForm).options(false), "2025-11-25")
		if err := wantDone(t, callAsync(s, t.Context(), "f")); err != nil {
			t.Fatalf("call approved in the form of a client running two hosts: %v", err)
		}
	})
}

// TestElicitFormBehindUnlistedWrapper: the real MCP client (the test
// process) runs a host through a program that is not a known wrapper (a
// shell running a script file, a lock wrapper, env inside a script), so
// the host takes that program for its client. An agent's own host, whose
// fake client the real client started, still gets no proof client: the
// fake client descends from the first host's ancestors within its
// session.
func TestElicitFormBehindUnlistedWrapper(t *testing.T) {
	needProc(t)
	dir := t.TempDir()
	launch := filepath.Join(dir, "launch.sh")
	fake := filepath.Join(dir, "fake-client.sh")
	for _, f := range []string{launch, fake} {
		if err := os.WriteFile(f, []byte("\"$@\"\nexit $?\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, tool string
		prefix     []string
	}{
		{"sh script", "sh", []string{"sh", launch}},
		{"flock", "flock", []string{"flock", filepath.Join(dir, "lock")}},
		{"env in sh script", "env", []string{"sh", launch, "env", "A=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.tool); err != nil {
				testenv.Missing(t, c.tool+" is not on PATH: install util-linux (flock) and coreutils (env) to run this test")
			}
			t.Parallel()
			first := newGrantsProject(t, nil)
			cmd := first.command(c.prefix[0], append(append(c.prefix[1:], testenv.Mcpepoch(t)), first.hostArgs(nil)...)...)
			eConnectCmd(t, first, cmd, newAsker(approveForm).options(false), "2025-11-25")

			p := newGrantsProject(t, nil)
			p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"client\"]\napproval_wait = \"30s\"", 1))
			agent := p.command("sh", append([]string{fake, testenv.Mcpepoch(t)}, p.hostArgs(nil)...)...)
			s := eConnectCmd(t, p, agent, newAsker(approveForm).options(false), "2025-11-25")
			wantHeldRefusal(t, wantDone(t, callAsync(s, t.Context(), "f")), "failed")
			if gs := p.grants(); len(gs) != 0 {
				t.Fatalf("grants after a fake client's accept: %+v", gs)
			}
			refused := p.auditRecords("approval_refused")
			if len(refused) != 1 || refused[0].Fields["proof"] != "same-user" ||
				!strings.Contains(refused[0].Fields["reason"].(string), "within its session") {
				t.Fatalf("approval_refused records: %+v, want one of proof same-user naming the first host's session", refused)
			}
		})
	}
}
