package host_test

// The agent cannot approve itself at the default proof level: mcpepoch
// approve --yes, a terminal approval without a controlling terminal, one
// through a faked terminal (script -qc) started by the MCP client, a raw
// socket request, and one started by the server itself are each refused
// and audited; the call stays refused. With proof = ["same-user"], --yes
// counts and the grant says what it proved.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// newDefaultProofProject is a grants project without a proof list, and an
// empty trust store (XDG_CONFIG_HOME of its own): the default proof is
// terminal or client. It returns the env every process of the test gets.
func newDefaultProofProject(t testing.TB) (*project, []string) {
	t.Helper()
	p := newGrantsProject(t, nil)
	toml := strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]\n", "", 1)
	if strings.Contains(toml, "proof") {
		t.Fatalf("testdata/grants/mcpepoch.toml: proof list not removed:\n%s", toml)
	}
	p.write("mcpepoch.toml", toml)
	return p, []string{"XDG_CONFIG_HOME=" + filepath.Join(p.dir, "config")}
}

// shell runs sh -c script in the project with env and returns its output
// and exit status; stdin is empty.
func (p *project) shell(env []string, script string) (testenv.Output, int) {
	p.t.Helper()
	return testenv.Run(p.t, p.dir, append(env, "MCPEPOCH_BIN="+testenv.Mcpepoch(p.t)), "sh", "-c", script)
}

// wantApprovalRefused checks that the n-th approval_refused record exists
// with proof same-user and a reason containing why, and that slow_write is
// still refused.
func wantApprovalRefused(t *testing.T, p *project, s *gSession, n int, why string) {
	t.Helper()
	recs := p.waitRecords(fmt.Sprintf("%d approval_refused records", n), func(rs []audit.Record) bool {
		return len(filterType(rs, audit.TypeApprovalRefused)) >= n
	})
	r := filterType(recs, audit.TypeApprovalRefused)[n-1]
	if r.Fields["proof"] != string(approval.ProofSameUser) || !strings.Contains(fmt.Sprint(r.Fields["reason"]), why) ||
		r.Fields["required_proof"] != "terminal, client" {
		t.Errorf("approval_refused %d: %v, want proof same-user, reason with %q, required terminal, client", n, r.Fields, why)
	}
	if got := filterType(recs, audit.TypeApprovalGranted); len(got) != 0 {
		t.Fatalf("approval_granted records at the default proof: %v", got)
	}
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")
}

func filterType(recs []audit.Record, typ string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// approveArgs are the arguments of an approval of slow_write for run.
func approveArgs(run string) string {
	return "approve --run " + run + " --tools slow_write --credential " + gStaging
}

func TestApproveByAgentRefusedAtDefaultProof(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "script", testenv.InstallUtilLinux) // the faked terminal cases
	testenv.Need(t, "setsid", testenv.InstallUtilLinux) // case 2
	needProc(t)
	p, env := newDefaultProofProject(t)
	// The server starts a faked-terminal approval of its own once the
	// trigger file exists.
	p.server(`(while [ ! -e trigger ]; do sleep 0.05; done
  printf 'y\n' | script -qec "`+testenv.Mcpepoch(t)+` approve --tools slow_write --credential `+gStaging+`" /dev/null >server-approve.out 2>&1
  echo $? >server-approve.rc) &
`, map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")

	// 1. --yes asks nobody: it proves same-user only.
	out, code := p.runCLI(env, "approve", "--yes", "--run", s.run, "--tools", "slow_write", "--credential", gStaging)
	if code == 0 || !strings.Contains(out.Stderr, "proves only same-user") || !strings.Contains(out.Stderr, "run mcpepoch approve in their own terminal") || strings.Contains(out.Stderr, "--yes") {
		t.Fatalf("approve --yes at the default proof: exit %d\n%s", code, out)
	}
	wantApprovalRefused(t, p, s, 1, "nobody was asked")

	// 2. No controlling terminal: a pseudo-terminal as stdin, but setsid
	// leaves the session that owns it.
	out, code = p.shell(env, `printf 'y\n' | script -qec "setsid -w $MCPEPOCH_BIN `+approveArgs(s.run)+`" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "proves only same-user") {
		t.Fatalf("approval without a controlling terminal: exit %d\n%s", code, out)
	}
	wantApprovalRefused(t, p, s, 2, "has no controlling terminal")

	// 3. A faked terminal started by the MCP client (this test).
	out, code = p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN `+approveArgs(s.run)+`" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "descends from the MCP client that launched this host") {
		t.Fatalf("approval through script -qc: exit %d\n%s", code, out)
	}
	wantApprovalRefused(t, p, s, 3, "descends from the MCP client")

	// 4. The socket directly, claiming a terminal.
	st := p.statusOf(s.run)
	payload, _ := json.Marshal(localapi.ApproveRequest{Epoch: st.Execution.Epoch, Tools: []string{"slow_write"},
		Credentials: []string{gStaging}, Channel: localapi.ChannelTerminal})
	dir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	resp, err := notify.Send(ctx, filepath.Join(dir, s.run+notify.SocketSuffix), notify.Request{Type: localapi.TypeApprove, Payload: payload})
	cancel()
	if err == nil && resp.Error == "" || !strings.Contains(fmt.Sprint(err, resp.Error), "proves only same-user") {
		t.Fatalf("raw socket approval: %+v, %v", resp, err)
	}
	wantApprovalRefused(t, p, s, 4, "(pid ")

	// 5. The server itself.
	if err := os.WriteFile(p.path("trigger"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "the server's approval to end", func() bool { return p.read("server-approve.rc") != "" })
	if rc := strings.TrimSpace(p.read("server-approve.rc")); rc == "0" || !strings.Contains(p.read("server-approve.out"), "descends from the server") {
		t.Fatalf("approval by the server: exit %s\n%s", rc, p.read("server-approve.out"))
	}
	wantApprovalRefused(t, p, s, 5, "descends from the server")
}

func TestApproveYesCountsWithSameUserProof(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil) // proof = ["same-user"]
	s := gConnect(t, p)
	s.list()
	p.ready(s.run)
	id, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if g := p.grant(id); g.Proof != approval.ProofSameUser || g.Channel != localapi.ChannelScript {
		t.Errorf("grant %s: proof %q channel %q, want same-user, script", id, g.Proof, g.Channel)
	}
	s.text("slow_write", map[string]any{"key": "k", "delayMs": 0})
	recs := p.waitRecords("approval_granted", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalGranted)) == 1 })
	f := filterType(recs, audit.TypeApprovalGranted)[0].Fields
	if f["proof"] != "same-user" || f["channel"] != "script" || !strings.Contains(fmt.Sprint(f["unverified"]), "no person was proven") {
		t.Errorf("approval_granted: %v, want proof same-user, channel script, unverified", f)
	}
}
