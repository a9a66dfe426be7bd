package templates

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestMakeHookEchoIsShort: make echoes the recipe line as written, the
// build command and a short eval of the hook, not the whole expanded hook
// on every build; the hook still runs with the build's status.
func TestMakeHookEchoIsShort(t *testing.T) {
	t.Parallel()
	mk := testenv.Make(t)
	dir, stub, out := hookDir(t, "mcpepoch.mk", "Makefile", makefile, 0)
	cmd := exec.Command(mk, "build", "CODE=0", "MCPEPOCH="+stub)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCPEPOCH_FLAGS=")
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, output)
	}
	if want := "sh -c 'exit 0'; eval \"$MCPEPOCH_HOOK\"\n"; string(output) != want {
		t.Errorf("make printed %q, want only the recipe line %q", output, want)
	}
	if strings.Contains(string(output), "--exit-code") {
		t.Errorf("make echoed the expanded hook:\n%s", output)
	}
	if got := stubArgs(t, out); strings.Join(got, " ") != "record --exit-code 0" {
		t.Errorf("hook called with %q", got)
	}
}
