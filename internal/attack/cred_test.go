package attack_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestEnvCredentialNotInEnviron: the host was given the secret of an env
// credential source in its environment, as an MCP client gives it, and a
// person approved the tool that uses it. The agent reads the initial
// environment of every process it can (/proc/PID/environ): none holds
// the secret, the host's and its server's included, while the server
// gets it from the broker during the approved call. Unconfined, the
// agent can read the environment of the host and of its server, so the
// scan is a real one; confined (no capabilities, in this test run as
// root where the host holds them all) it cannot read theirs at all, the
// same result for another reason.
func TestEnvCredentialNotInEnviron(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("reads /proc: Linux only")
	}
	for _, where := range []confinement{unconfined, confined} {
		t.Run(where.String(), func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			s := connect(t, p, nil)
			p.personApprove(s.run, "--tools", "write_secret", "--credential", "api")
			// A call in flight: the server, and the broker, at work.
			release := filepath.Join(t.TempDir(), "release")
			var wg sync.WaitGroup
			var answer string
			wg.Go(func() { answer, _ = s.call("write_secret", map[string]any{"wait_for": release}) })
			waitFor(t, "the call in flight", func() bool { return p.status(s.run).InFlight == 1 })

			a := newAgent(t, where, p.dir)
			out := a.must(`"$AGENT_TOOL" environ ` + p.secret)
			os.WriteFile(release, nil, 0o600)
			wg.Wait()
			if !strings.HasPrefix(answer, "issued ") {
				t.Errorf("write_secret under the person's grant: %q, want the secret issued", answer)
			}
			if strings.Contains(out, "holds it:") {
				t.Fatalf("the agent (%s) found the env credential's secret in a process's environment:\n%s", where, out)
			}
			m := regexp.MustCompile(`(?m)^readable: (.*)$`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("the agent's scan: %s", out)
			}
			readable := strings.Fields(m[1])
			st := p.status(s.run)
			for _, pid := range []int{s.cmd.Process.Pid, st.Execution.ProcessID} {
				if got := slices.Contains(readable, strconv.Itoa(pid)); got != (where == unconfined) {
					t.Errorf("the agent (%s) could read the environment of %d (the host and its server are %d, %d): %v", where, pid, s.cmd.Process.Pid, st.Execution.ProcessID, got)
				}
			}
		})
	}
}

// TestBrokerAskedByAgent: the agent finds the credentials broker's socket
// of the running epoch and asks it for a scope's secret with no call
// token, outside any call and while a granted call that uses the scope is
// in flight. It is refused both times (wrong_process: it is neither the
// epoch's server nor its descendant), from inside the sandbox as from
// outside (the socket is reachable from both; what the broker checks is
// who connected, by the kernel's word).
func TestBrokerAskedByAgent(t *testing.T) {
	t.Parallel()
	p := credProject(t)
	s := connect(t, p, nil)
	p.personApprove(s.run, "--tools", "write_secret", "--credential", "api")
	a := newAgent(t, confined, p.dir)
	ask := func(when string) {
		t.Helper()
		out, code := a.run(`"$AGENT_TOOL" broker api`)
		if code == 0 {
			t.Fatalf("the agent got a secret from the broker %s:\n%s", when, out)
		}
		wantIn(t, "the broker's answer "+when, out.Combined, "refused wrong_process: ", "is neither the server of epoch")
	}
	ask("outside any call")
	release := filepath.Join(t.TempDir(), "release")
	var wg sync.WaitGroup
	var answer string
	wg.Go(func() { answer, _ = s.call("write_secret", map[string]any{"wait_for": release}) })
	waitFor(t, "the call in flight", func() bool { return p.status(s.run).InFlight == 1 })
	ask("during a granted call")
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
	if !strings.HasPrefix(answer, "issued ") {
		t.Errorf("write_secret under the person's grant: %q, want the secret issued", answer)
	}
}
