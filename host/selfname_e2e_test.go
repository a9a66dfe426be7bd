package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestMessagesNameTheCommandAsInvoked: a project's npm install puts no
// mcpepoch on PATH, so what mcpepoch tells its person names `npx
// mcpepoch …`: the refusal a host started through node_modules/.bin/
// mcpepoch sends the MCP client, and a command's advice on stderr. The
// same binary started by its own path names `mcpepoch …`.
func TestMessagesNameTheCommandAsInvoked(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	bin := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(npmLauncher(t)))), ".bin", "mcpepoch")
	p := newGrantsProject(t, nil)
	s := gConnectVia(t, p, []string{bin})
	s.list()
	data := s.rpcError("slow_write", map[string]any{"key": "n", "delayMs": 0}, host.CodeAuthorizationRequired, "authorization_required:")
	if a, _ := data["action"].(string); a != "a person must run npx mcpepoch approve in their own terminal" {
		t.Errorf("error data action through the npm install = %q, want it to name npx mcpepoch approve", a)
	}

	if out, _ := exec.Command(bin, "no-such-command").CombinedOutput(); !strings.Contains(string(out), "run 'npx mcpepoch help' for the list of commands") {
		t.Errorf("%s no-such-command: %s\nwant the hint to name npx mcpepoch help", bin, out)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "mcpepoch.toml"), []byte("command = [\"sh\", \"server.sh\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The platform package's own binary, which a client config may name
	// (no launcher, no node): its path says it is a project's npm install.
	plat := filepath.Join(t.TempDir(), "node_modules", "@mcpepoch", "linux-x64", "bin")
	if err := os.MkdirAll(plat, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcpepoch"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(testenv.Mcpepoch(t)), name))
		if err == nil {
			err = os.WriteFile(filepath.Join(plat, name), b, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for prog, want := range map[string]string{
		bin:                             "run npx mcpepoch init to write one",
		filepath.Join(plat, "mcpepoch"): "run npx mcpepoch init to write one",
		testenv.Mcpepoch(t):             "run mcpepoch init to write one",
	} {
		cmd := exec.Command(prog, "dev")
		cmd.Dir, cmd.Env = empty, testenv.Environ()
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) || !strings.Contains(want, "npx") && strings.Contains(string(out), "npx") {
			t.Errorf("%s dev with no build file: %s\nwant %q", prog, out, want)
		}
	}
}
