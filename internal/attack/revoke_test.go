package attack_test

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// TestRevokeWithSlotsHeld: a person approved write_secret; the agent holds
// every one of the host's socket slots, and its overflow lane, renewing
// each connection as soon as the host drops it, from inside the sandbox
// (connect(2) needs no write access to the socket's directory). The
// person's mcpepoch revoke still ends the grant, through its request file,
// and the next call is refused as revoked, naming mcpepoch approve.
//
// What still passes: the request file is in the project, which the agent
// writes. An agent that also puts a file where the requests' directory
// goes (.mcpepoch/revoke) keeps the grant: revoke cannot write its
// request, fails (exit 1) and says the grant was not revoked, so the
// person knows to end the session (close the client, which ends the host
// and its grants).
func TestRevokeWithSlotsHeld(t *testing.T) {
	t.Parallel()
	for _, blocks := range []bool{false, true} {
		name := "holds the slots"
		if blocks {
			name = "and the request file's place"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := credProject(t)
			s := connect(t, p, nil)
			gid := p.personApprove(s.run, "--tools", "write_secret", "--credential", "api")
			if text := s.text("write_secret", nil); !strings.HasPrefix(text, "issued ") {
				t.Fatalf("write_secret under the person's grant: %q", text)
			}
			a := newAgent(t, confined, p.dir)
			script := `exec "$AGENT_TOOL" hold ` + s.run
			if blocks {
				script = `rm -rf .mcpepoch/revoke && : >.mcpepoch/revoke && ` + script
			}
			a.start(script).waitOutput(t, "held")

			out, code := p.cli(nil, "revoke", gid)
			if blocks {
				if code == 0 {
					t.Fatalf("revoke reported success while the agent blocked its request file:\n%s", out)
				}
				wantIn(t, "revoke", out.Combined, "revoke request file: ", "not revoked", "could not take the request", "the request file could not be written")
				if text := s.text("write_secret", nil); !strings.HasPrefix(text, "issued ") {
					t.Fatalf("write_secret after the failed revoke: %q, want the grant still live (the limit the docs name)", text)
				}
				return
			}
			if code != 0 || !strings.Contains(out.Stdout, "revoked grant "+gid) {
				t.Fatalf("revoke with every slot held by the confined agent: exit %d\n%s", code, out)
			}
			s.refused("write_secret", nil, host.CodeAuthorizationRequired, "authorization_required:", "was revoked", "mcpepoch approve")
		})
	}
}
