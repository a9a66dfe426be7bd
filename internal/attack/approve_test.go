package attack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// TestApproveByItself: the agent approves the call it needs by itself, at
// the default proof level (terminal or client), three ways: mcpepoch
// approve --yes; mcpepoch approve through a faked terminal (script -qc)
// answering y; an approval request written to the host's socket directly,
// claiming a terminal, from a faked terminal too. Each is refused, says
// why and what a person does, and is audited (approval_refused); the call
// stays refused. Confined or not, the result is the same: the host tells
// the agent by where its process descends from (the MCP client that
// launched the host), which a sandbox does not change, and the socket is
// reachable from inside one.
func TestApproveByItself(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	p := credProject(t)
	s := connect(t, p, nil)
	ep := p.ready(s.run).Execution.Epoch
	refused := 0
	for _, where := range []confinement{confined, unconfined} {
		a := newAgent(t, where, p.dir)
		for _, c := range []struct {
			how, script string
			want        []string
		}{
			{"approve --yes", `"$MCPEPOCH_BIN" approve --yes --run ` + s.run + ` --tools write_secret --credential api`,
				[]string{"proves only same-user", "run mcpepoch approve in their own terminal"}},
			{"script -qc", `printf 'y\n' | script -qec "$MCPEPOCH_BIN approve --run ` + s.run + ` --tools write_secret --credential api" /dev/null`,
				[]string{"proves only same-user", "descends from the MCP client that launched this host", "mcpepoch approve"}},
			{"the socket", `script -qec "$AGENT_TOOL approve ` + s.run + ` ` + string(ep) + ` write_secret api" /dev/null`,
				[]string{"refused: ", "proves only same-user", "descends from the MCP client that launched this host", "mcpepoch approve"}},
		} {
			out, code := a.run(c.script)
			if code == 0 {
				t.Fatalf("the agent (%s) approved through %s:\n%s", where, c.how, out)
			}
			wantIn(t, fmt.Sprintf("the agent's approval (%s) through %s", where, c.how), out.Combined, c.want...)
			refused++
			waitFor(t, fmt.Sprintf("%d approval_refused records", refused), func() bool {
				return len(ofType(p.records(), audit.TypeApprovalRefused)) >= refused
			})
		}
	}
	recs := p.records()
	if got := ofType(recs, audit.TypeApprovalGranted); len(got) != 0 {
		t.Fatalf("approval_granted records: %v", got)
	}
	for _, r := range ofType(recs, audit.TypeApprovalRefused) {
		if r.Fields["proof"] != "same-user" {
			t.Errorf("approval_refused %s: proof %v, want same-user", fields(r), r.Fields["proof"])
		}
	}
	s.refused("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required:", "mcpepoch approve")
}

// TestDetachedTerminalPasses is what still passes at the terminal level:
// a pseudo-terminal the agent opens (script) in a session it detaches
// (setsid -f), answering y itself. The detached process is reparented to
// PID 1, out of the MCP client's tree, and the host cannot tell it from
// a person's own terminal: unconfined, and confined with the process
// table shared (Codex's Landlock sandbox), the grant is made with proof
// terminal. In a PID namespace of its own (Claude Code's sandbox:
// bubblewrap --unshare-pid) the detached process is reparented to the
// namespace's init instead, which descends from the client: refused.
// Only presence (an enrolled authenticator) stops it everywhere.
func TestDetachedTerminalPasses(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	for _, c := range []struct {
		where  confinement
		passes bool
	}{
		{unconfined, true},
		{confined, true},
		{confinedPID, false},
	} {
		t.Run(c.where.String(), func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			s := connect(t, p, nil)
			a := newAgent(t, c.where, p.dir)
			out, code := a.run(detached(`$MCPEPOCH_BIN approve --run ` + s.run + ` --tools write_secret --credential api`))
			if !c.passes {
				if code == 0 {
					t.Fatalf("the agent's detached terminal (%s) approved:\n%s", c.where, out)
				}
				wantIn(t, "the refusal", out.Combined, "proves only same-user", "descends from the MCP client that launched this host")
				s.refused("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required:", "mcpepoch approve")
				return
			}
			if code != 0 || !approveRe.MatchString(out.Combined) {
				t.Fatalf("the agent's detached terminal (%s): exit %d, want the approval to pass at the terminal level (the limit the docs name)\n%s", c.where, code, out)
			}
			r := p.waitRecord(audit.TypeApprovalGranted, nil)
			if r.Fields["proof"] != "terminal" {
				t.Errorf("approval_granted %s: want proof terminal", fields(r))
			}
			if text := s.text("write_secret", nil); !strings.HasPrefix(text, "issued ") {
				t.Errorf("write_secret under the agent's grant: %q", text)
			}
		})
	}
}
