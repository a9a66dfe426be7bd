package attack_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// weakened is credPolicy with write_secret exempt: a weakening of the
// project's policy floor.
var weakened = strings.Replace(credPolicy, `exempt = ["env"]`, `exempt = ["env", "write_secret"]`, 1)

// TestPolicyAcceptWeakening: the agent makes write_secret exempt in
// mcpepoch.toml and restarts the server (a new epoch reads the file
// again). The host does not apply the weakening, and the call stays
// refused, naming mcpepoch policy accept. The agent's mcpepoch policy
// accept --yes, and one through a faked terminal (script -qc) answering
// y, are refused, naming what a person does; the floor holds. Then the
// agent answers policy accept in a terminal it detached (setsid -f):
// unconfined it is accepted, the terminal level's limit (only presence
// stops it), and the next epoch runs the weaker policy; confined, nothing
// tells it apart either, but the floor file is in the user's config
// directory, read-only in the sandbox, and nothing is accepted; in a PID
// namespace of its own the kernel names no pid for the host listening on
// the socket, so policy accept finds no host it can examine and asks for
// presence.
func TestPolicyAcceptWeakening(t *testing.T) {
	t.Parallel()
	needTerminalTools(t)
	for _, where := range []confinement{unconfined, confined, confinedPID} {
		t.Run(where.String(), func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			s := connect(t, p, nil)
			a := newAgent(t, where, p.dir)
			// A new epoch reads the file again: the agent restarts the
			// server to have it put in force.
			a.must(`cat >mcpepoch.toml <<'EOF'
` + weakened + `EOF
"$MCPEPOCH_BIN" restart`)
			msg := s.refused("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required:", "mcpepoch policy accept")
			wantIn(t, "the refusal", msg, "grants.exempt")

			for _, c := range []struct {
				how, script string
				want        []string
			}{
				{"policy accept --yes", `"$MCPEPOCH_BIN" policy accept --yes`, []string{"not accepted", "--yes proves no person", "mcpepoch policy accept"}},
				{"script -qc", `printf 'y\n' | script -qec "$MCPEPOCH_BIN policy accept" /dev/null`, []string{"not accepted", "mcpepoch enroll"}},
			} {
				out, code := a.run(c.script)
				if code == 0 {
					t.Fatalf("the agent (%s) accepted the weakening through %s:\n%s", where, c.how, out)
				}
				wantIn(t, "the agent's "+c.how, out.Combined, c.want...)
				if c.how == "script -qc" && where != confinedPID {
					wantIn(t, "the agent's "+c.how, out.Combined, "descends from the MCP client that launched an mcpepoch host")
				}
			}
			if out := p.must("policy"); strings.Contains(out, "holds the same policy as the floor") {
				t.Fatalf("the floor was weakened:\n%s", out)
			}

			out, code := a.run(detached(`$MCPEPOCH_BIN policy accept`))
			accepted := strings.Contains(p.must("policy"), "holds the same policy as the floor")
			switch where {
			case unconfined:
				if code != 0 || !accepted {
					t.Fatalf("the agent's detached terminal, unconfined: exit %d, accepted %v; want the weakening accepted at the terminal level (the limit the docs name)\n%s", code, accepted, out)
				}
			case confined:
				if code == 0 || accepted {
					t.Fatalf("the agent's detached terminal, confined: exit %d, accepted %v; want nothing accepted (the floor file is read-only)\n%s", code, accepted, out)
				}
				wantIn(t, "the agent's detached policy accept", out.Combined, "read-only file system")
			case confinedPID:
				if code == 0 || accepted {
					t.Fatalf("the agent's detached terminal in a PID namespace: exit %d, accepted %v\n%s", code, accepted, out)
				}
				// From inside the namespace the kernel names no process
				// listening on the host's socket (a peer pid of 0): policy
				// accept says the host answered but cannot be examined.
				wantIn(t, "the agent's detached policy accept", out.Combined, "not accepted", "the kernel names no process for them", "PID namespace", "mcpepoch enroll")
			}
			// The next epoch puts in force what the floor holds.
			p.must("restart")
			if where == unconfined {
				if _, err := s.call("write_secret", nil); err != nil {
					t.Fatalf("write_secret after the accepted weakening: %v; want it forwarded with no grant", err)
				}
				return
			}
			s.refused("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required:", "mcpepoch policy accept")
		})
	}
}

// floorFile is the shell expression of the project's policy floor file
// as the agent finds it: in the user's config directory, named by the
// SHA-256 of the project root.
const floorFile = `"$XDG_CONFIG_HOME/mcpepoch/floors/$(printf %s "$PWD" | sha256sum | cut -c1-64).json"`

// TestFloorForged: while no host runs, the agent weakens mcpepoch.toml
// and makes the weaker policy look like the floor an earlier host held:
// it appends a trust_pinned record naming it to the audit log, with an
// intact hash chain, and writes it as the floor file. Confined, the floor
// file and the copy of the audit head are out of its reach (the user's
// config and state directories are read-only in the sandbox): removing or
// writing the floor fails, the appended record leaves the log ahead of
// the copy, audit verify exits 5, and the next host refuses to start,
// naming what to look at. Unconfined, it reaches both: the next host
// takes the forged floor, and the weakening is in force, the limit the
// docs name (an agent running as the user without a sandbox writes the
// user's files; only a separate OS user or a signature closes it).
func TestFloorForged(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "sha256sum", testenv.InstallCoreutils)
	for _, where := range []confinement{confined, unconfined} {
		t.Run(where.String(), func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			connect(t, p, nil).close() // the first host wrote the floor
			a := newAgent(t, where, p.dir)
			a.must(`cat >mcpepoch.toml <<'EOF'
` + weakened + `EOF`)
			if where == confined {
				for _, script := range []string{`rm -f ` + floorFile, `printf '{}' >` + floorFile} {
					out, code := a.run(script)
					if code == 0 {
						t.Fatalf("the confined agent ran %s:\n%s", script, out)
					}
					wantIn(t, "the confined agent's "+script, out.Combined, "Read-only file system")
				}
			}
			out, code := a.run(`"$AGENT_TOOL" forge-floor`)
			if where == unconfined {
				if code != 0 {
					t.Fatalf("the unconfined agent's forged floor: exit %d\n%s", code, out)
				}
				s := connect(t, p, nil)
				if text, err := s.call("write_secret", nil); err != nil {
					t.Fatalf("write_secret under the floor the unconfined agent forged: %v; want it forwarded with no grant (the limit the docs name)\n%s", err, out)
				} else {
					t.Logf("write_secret, exempt by the forged floor, answered %q", text)
				}
				return
			}
			if code == 0 {
				t.Fatalf("the confined agent forged the floor:\n%s", out)
			}
			wantIn(t, "the confined agent's forge", out.Combined, "the audit line: appended (copy of the head kept: false)", "the floor file: ", "read-only file system")
			vout, vcode := p.cli(nil, "audit", "verify")
			if vcode != 5 {
				t.Fatalf("audit verify after the forged line: exit %d, want 5\n%s", vcode, vout)
			}
			wantIn(t, "audit verify", vout.Combined, "copy")
			hout, hcode := p.cli(nil, "host", "--dir", p.dir, "--", "sh", "./server.sh")
			if hcode == 0 {
				t.Fatalf("a host started on the log the confined agent forged:\n%s", hout)
			}
			wantIn(t, "the host's refusal", hout.Stderr, "mcpepoch audit verify")
		})
	}
}
