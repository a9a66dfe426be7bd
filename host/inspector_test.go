package host_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned in
// testdata/inspector) uses the host as a one-shot server: one host per
// invocation.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	testenv.LookNode(t)
	dir := filepath.Join(testenv.RepoRoot(t), "host", "testdata", "inspector")
	testenv.NPM(t, dir)
	inspector := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	server := append([]string{"--cli", mcpepoch(t)}, p.hostArgs(nil)...)

	inspect := func(args ...string) string {
		t.Helper()
		out, code := testenv.Run(t, p.dir, nil, inspector, append(slices.Clone(server), args...)...)
		if code != 0 {
			t.Fatalf("mcp-inspector %v: exit %d\n%s", args, code, out)
		}
		return out.Stdout
	}

	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	out := inspect("--method", "tools/list")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"publish_preview", "slow_write", "version"}) {
		t.Errorf("tools %q", names)
	}

	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	out = inspect("--method", "tools/call", "--tool-name", "publish_preview", "--tool-arg", "branch=main")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("tools/call: %v\n%s", err, out)
	}
	if want := "publish_preview branch=main target=preview revision=A"; res.Content[0].Text != want {
		t.Errorf("tools/call: got %q, want %q", res.Content[0].Text, want)
	}
}
