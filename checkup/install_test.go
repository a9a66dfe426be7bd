package checkup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/cli"
)

// TestIncompleteDropsEitherFix: the front's failure line ends in the fix
// for its kind of install (npm's or a clone's); incomplete keeps what is
// wrong and drops that fix, which installFix says again for the path, so a
// doctor line never carries it twice.
func TestIncompleteDropsEitherFix(t *testing.T) {
	for _, fix := range []string{cli.InstallFix, cli.NPMInstallFix("/p/node_modules/@mcpepoch/linux-x64/bin/mcpepoch")} {
		dir := filepath.Join(t.TempDir(), "node_modules", "@mcpepoch", "linux-x64", "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		front := filepath.Join(dir, "mcpepoch")
		script := "#!/bin/sh\necho 'mcpepoch: error: " + dir + "/mcpepoch-core is missing: " + fix + "' >&2\nexit 2\n"
		if err := os.WriteFile(front, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		c := &check{}
		got := c.incomplete(front)
		if want := dir + "/mcpepoch-core is missing"; got != want {
			t.Errorf("incomplete with fix %q = %q, want %q", fix, got, want)
		}
		if line := got + "; fix: " + installFix(front); strings.Count(line, "npm i -D") > 1 {
			t.Errorf("doctor line names the npm fix twice: %s", line)
		}
	}
}
