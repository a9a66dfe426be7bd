package host_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestStateDirOfAnotherUserRefused: a .mcpepoch that another user owns,
// or that is a symbolic link, is refused by the host and the build hook
// with an error naming it, and nothing is written through it.
func TestStateDirOfAnotherUserRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		make       func(t *testing.T, p *project)
	}{
		{"another user's", "is owned by uid 65534", func(t *testing.T, p *project) {
			if os.Geteuid() != 0 {
				t.Skip("making a directory another user owns needs root")
			}
			if err := os.Mkdir(p.path(".mcpepoch"), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p.path(".mcpepoch"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symbolic link", "is a symbolic link", func(t *testing.T, p *project) {
			if err := os.Mkdir(p.path("elsewhere"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("elsewhere", p.path(".mcpepoch")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, nil)
			tc.make(t, p)
			for _, args := range [][]string{p.hostArgs(nil), {"record", "--dir", p.dir}} {
				out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), args...)
				if code == 0 || !strings.Contains(out.Stderr, ".mcpepoch "+tc.want) || !strings.Contains(out.Stderr, "refusing to keep grants") {
					t.Errorf("mcpepoch %s: exit %d, want an error saying .mcpepoch %s:\n%s", args[0], code, tc.want, out)
				}
				if strings.Contains(out.Stderr, "started pid") {
					t.Errorf("mcpepoch %s started the server:\n%s", args[0], out)
				}
			}
			if ents, _ := os.ReadDir(p.path(".mcpepoch")); len(ents) > 0 {
				t.Errorf(".mcpepoch holds %d entries written through it", len(ents))
			}
		})
	}
}
