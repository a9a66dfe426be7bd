package host_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestOneShotRefusalNamesExempt: a one-shot client (MCP Inspector CLI, a
// new agent run per invocation, which shows only the error's message)
// whose call is refused for want of a grant cannot wait for an approval:
// the refusal names the other way out, [grants] exempt.
func TestOneShotRefusalNamesExempt(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	dir := filepath.Join(testenv.RepoRoot(t), "host", "testdata", "inspector")
	testenv.NPM(t, dir)
	inspector := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n") // every tool needs a grant
	args := append([]string{"--cli", mcpepoch(t)}, p.hostArgs(nil)...)
	args = append(args, "--method", "tools/call", "--tool-name", "publish_preview", "--tool-arg", "branch=main")
	out, code := testenv.Run(t, p.dir, nil, inspector, slices.Clone(args)...)
	if code == 0 {
		t.Fatalf("mcp-inspector tools/call without a grant: exit 0, want a refusal\n%s", out)
	}
	want := "MCP error -31010: authorization_required: no grant covers this call (tool publish_preview, execution epoch "
	if !strings.Contains(out.Combined, want) {
		t.Fatalf("mcp-inspector output does not show the refusal:\n%s", out)
	}
	want = "; a client that connects for one call cannot wait for an approval: to call a tool that way, the project lists it under [grants] exempt in mcpepoch.toml, and a person accepts that weakening with mcpepoch policy accept while a client that stays connected runs a host of the project\n"
	if !strings.Contains(out.Combined, want) {
		t.Errorf("the refusal does not name the way out, [grants] exempt:\n%s", out)
	}
}
