package attack_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// libServer is a stdio MCP server in plain Python, server.py FILE, whose
// tool read imports lib.impl at its first call and answers with
// impl.run(), a colon and the content of FILE; ping answers pong. Its
// code beside the entry lives in lib/.
func libServer(t testing.TB) string {
	return strings.Replace(strings.Replace(lazyServer(t), "from app import impl", "from lib import impl", 1),
		`"text": impl.run()`, `"text": impl.run() + ":" + open(sys.argv[1]).read().strip()`, 1)
}

// TestIdentityNarrowedByFile: the agent rewrites mcpepoch.toml so that
// the identity hashes less of what the server runs: code = [...] naming
// a file that is not there (lib/ is no longer hashed), or data naming the
// file the command line gives the server (answer.txt, taken out as the
// server's own data), and waits for the next session. The host that
// starts does not apply the narrowing: status and its log say so, and
// after the agent edits lib/ or answer.txt (and status checks the
// identity) the call a person approved is refused identity_drift, the
// agent's code not run; a restart reads the
// file again and still does not apply it. A person's mcpepoch policy
// accept then makes the file's setting the floor, in force at the next
// start.
func TestIdentityNarrowedByFile(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	for _, c := range []struct{ name, setting, toml, edit, changed, hashed string }{
		{"code", "code", `code = ["nothing_here"]`, `cat >lib/impl.py <<'EOF'
` + evilImpl + `EOF`, ". changed on disk", "the project the entry lies in"}, // the project's tree of Python code
		{"data", "data", `data = ["answer.txt"]`, `echo unapproved >answer.txt`, "answer.txt", "a file the launch command names (answer.txt)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needTerminalTools(t)
			p := newProject(t)
			p.write("server.py", libServer(t))
			p.write("lib/__init__.py", "")
			p.write("lib/impl.py", "def run():\n    return 'approved code'\n")
			p.write("answer.txt", "approved\n")
			const policy = "command = [\"python3\", \"server.py\", \"answer.txt\"]\n\n[grants]\nexempt = [\"ping\"]\n"
			p.write("mcpepoch.toml", policy)
			connect(t, p, nil, "python3", "server.py", "answer.txt").close() // the first host wrote the floor

			a := newAgent(t, confined, p.dir)
			a.must(`cat >mcpepoch.toml <<'EOF'
` + c.toml + "\n" + policy + `EOF`)
			s := connect(t, p, nil, "python3", "server.py", "answer.txt")
			st := p.status(s.run)
			if len(st.PolicyNotApplied) != 1 || st.PolicyNotApplied[0].Setting != c.setting {
				t.Fatalf("status of the host started on the narrowed file: policyNotApplied %+v, want %s", st.PolicyNotApplied, c.setting)
			}
			wantIn(t, "the host's log", s.stderr.String(), "weakens the project's policy floor, not applied: "+c.toml)
			wantIn(t, "mcpepoch status", p.must("status"), "policy:", c.setting)

			p.personApprove(s.run, "--tools", "read")
			a.must(c.edit)
			// A file the command line names is in no watched tree: an edit
			// of it is seen at the next identity check, which status makes.
			p.status(s.run)
			msg := s.refused("read", nil, host.CodeAuthorizationStale, "authorization_stale: identity_drift:", "mcpepoch record", "mcpepoch restart")
			if p.exists("evil.ran") {
				t.Fatal("the agent's code ran under the person's approval")
			}
			wantIn(t, "the refusal of read", msg, c.changed)
			// The build hook hashes what the host does: the manifest
			// agrees with the identity in force.
			rec, code := p.cli(nil, "record", "-v")
			if code != 0 {
				t.Fatalf("mcpepoch record -v: exit %d\n%s", code, rec)
			}
			wantIn(t, "mcpepoch record -v", rec.Combined, c.hashed, "policy: "+config.FileName+" weakens the project's policy floor, not applied: "+c.toml)
			// A restart (a new epoch of the same host) reads the file
			// again: the narrowing still does not reach the identity.
			p.must("restart")
			st = p.ready(s.run)
			if len(st.PolicyNotApplied) != 1 {
				t.Fatalf("status after mcpepoch restart: policyNotApplied %+v", st.PolicyNotApplied)
			}
			if _, err := s.call("read", nil); err == nil {
				t.Fatal("read after the restart answered with no grant")
			}

			// A person accepts the narrowing at their own terminal.
			out, rc := detachedTerminal(t, p.dir, nil, "$MCPEPOCH_BIN policy accept")
			if rc != "0" {
				t.Fatalf("the person's policy accept: exit %s\n%s", rc, out)
			}
			wantIn(t, "the person's policy accept", out, c.setting)
			// Accepted, in force once a host starts again: what the
			// identity covers is read at start.
			if st := p.status(s.run); len(st.PolicyNotApplied) != 1 || !st.PolicyNotApplied[0].Accepted {
				t.Fatalf("status after the person accepted: policyNotApplied %+v, want it marked accepted", st.PolicyNotApplied)
			}
			wantIn(t, "mcpepoch status", p.must("status"), c.setting+" = ", "accepted, in force when the host starts again")
			s.close()
			s = connect(t, p, nil, "python3", "server.py", "answer.txt")
			if st := p.status(s.run); len(st.PolicyNotApplied) != 0 {
				t.Fatalf("status after the person accepted: policyNotApplied %+v", st.PolicyNotApplied)
			}
		})
	}
}
