package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestPolicyAcceptWithoutHostNeedsPresence: with no host running, a
// terminal of its own (script in a session of its own, as an agent can
// open) answering y to mcpepoch policy accept is not accepted: nothing
// tells it from the agent's, so a weakening needs presence, and the
// refusal names enroll.
func TestPolicyAcceptWithoutHostNeedsPresence(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "script", testenv.InstallUtilLinux)
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	c.Close() // the agent can end the host
	out, code := testenv.Run(t, p.dir, []string{"MCPEPOCH_BIN=" + p.bin, "SHELL=/bin/sh"}, "setsid", "-w", "sh", "-c",
		`printf 'y\n' | script -qec "$MCPEPOCH_BIN policy accept" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "not accepted: ") || !strings.Contains(out.Combined, "needs presence") || !strings.Contains(out.Combined, "enroll") {
		t.Fatalf("policy accept at a terminal with no host: exit %d\n%s\nwant it refused, naming enroll", code, out)
	}
	if out, _ := p.mcpepoch("policy"); strings.Contains(out.Stdout, "holds the same policy as the floor") {
		t.Fatalf("the floor was weakened:\n%s", out)
	}
}

// acceptDetached runs mcpepoch policy accept in the project in a terminal
// of its own (script in a session setsid detached from this process, as a
// person's terminal is, and as a determined agent can open), answering y,
// and returns what it printed and its exit status.
func acceptDetached(t *testing.T, p *project) (string, string) {
	t.Helper()
	dir := t.TempDir()
	out, rc := filepath.Join(dir, "accept.out"), filepath.Join(dir, "accept.rc")
	cmd := exec.Command("setsid", "-f", "sh", "-c",
		`printf 'y\n' | script -qec "$MCPEPOCH_BIN policy accept" /dev/null >"$OUT" 2>&1; echo $? >"$RC.tmp"; mv "$RC.tmp" "$RC"`)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ("MCPEPOCH_BIN="+p.bin, "SHELL=/bin/sh", "OUT="+out, "RC="+rc)
	if err := cmd.Run(); err != nil {
		t.Fatalf("setsid -f: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(rc); err == nil {
			printed, _ := os.ReadFile(out)
			return string(printed), strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			printed, _ := os.ReadFile(out)
			t.Fatalf("policy accept in a detached terminal did not end within 30s:\n%s", printed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPolicyAcceptNeedsThisProjectsHost: the agent ended the project's
// host, and a host of another project runs, one that identified its MCP
// client. A terminal apart from every host (one the agent can open too)
// still cannot accept a weakening: only a host of this project tells its
// agent's side from a person's. With the project's host running again,
// the same terminal accepts.
func TestPolicyAcceptNeedsThisProjectsHost(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"script", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool+" is not on PATH: install util-linux to run this test")
		}
	}
	p, c := floorProject(t)
	p.editToml(`exempt = ["inventory_lookup"]`, `exempt = ["inventory_lookup", "inventory_adjust"]`)
	c.Close() // the agent can end the host
	other := newProject(t).host()
	if _, rerr := other.List(); rerr != nil {
		t.Fatalf("the other project's host: %v", rerr)
	}

	out, rc := acceptDetached(t, p)
	if rc == "0" || !strings.Contains(out, "not accepted: ") || !strings.Contains(out, "no host of this project") ||
		!strings.Contains(out, "needs presence") || !strings.Contains(out, "enroll") {
		t.Fatalf("policy accept with only another project's host running: exit %s\n%s\nwant it refused, naming enroll", rc, out)
	}
	if out, _ := p.mcpepoch("policy"); strings.Contains(out.Stdout, "holds the same policy as the floor") {
		t.Fatalf("the floor was weakened:\n%s", out)
	}

	if _, rerr := p.host().List(); rerr != nil {
		t.Fatalf("the project's host: %v", rerr)
	}
	if out, rc := acceptDetached(t, p); rc != "0" {
		t.Fatalf("policy accept with the project's host running, from a terminal apart from it: exit %s\n%s", rc, out)
	}
	if out, _ := p.mcpepoch("policy"); !strings.Contains(out.Stdout, "holds the same policy as the floor") {
		t.Fatalf("the floor after the accept:\n%s", out)
	}
}
