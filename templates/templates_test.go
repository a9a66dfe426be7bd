package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	want := []string{
		"claude-code.mcp.json",
		"gitignore",
		"mcpepoch.Taskfile.yml",
		"mcpepoch.mk",
		"vscode.mcp.json",
	}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
}

// TestGetMatchesFiles checks that every template is the file of the same name
// in this directory, byte for byte, and is not empty.
func TestGetMatchesFiles(t *testing.T) {
	for _, name := range Names() {
		got, err := Get(name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if len(got) == 0 {
			t.Errorf("Get(%q) is empty", name)
		}
		disk, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, disk) {
			t.Errorf("Get(%q) differs from %s", name, name)
		}
	}
}

func TestGetReturnsCopy(t *testing.T) {
	a, err := Get("gitignore")
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		a[i] = 'x'
	}
	b, err := Get("gitignore")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("modifying the result of Get changed the template")
	}
}

func TestGetUnknown(t *testing.T) {
	for _, name := range []string{"", "nope", "templates.go", "templates_test.go", "../go.mod", "./gitignore"} {
		b, err := Get(name)
		var ue *UnknownError
		if !errors.As(err, &ue) {
			t.Fatalf("Get(%q) = %q, %v; want *UnknownError", name, b, err)
		}
		if ue.Name != name || !slices.Equal(ue.Valid, Names()) {
			t.Errorf("Get(%q): UnknownError = %+v", name, ue)
		}
		for _, n := range Names() {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("Get(%q): error %q does not list %q", name, err, n)
			}
		}
	}
}

// stdioServer is the part of a client's stdio server entry the templates set.
type stdioServer struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func checkHostLaunch(t *testing.T, name string, s stdioServer) {
	t.Helper()
	if s.Type != "stdio" || s.Command != "mcpepoch" {
		t.Errorf("%s: type %q command %q, want stdio mcpepoch", name, s.Type, s.Command)
	}
	i := slices.Index(s.Args, "--")
	if len(s.Args) == 0 || s.Args[0] != "host" || i < 0 || !slices.Equal(s.Args[i+1:], []string{"node", "dist/server.js"}) {
		t.Errorf("%s: args %q, want host [flags] -- node dist/server.js", name, s.Args)
	}
}

func decodeStrict(t *testing.T, name string, v any) {
	t.Helper()
	b, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the JSON value", name)
	}
}

func TestClaudeCode(t *testing.T) {
	var cfg struct {
		MCPServers map[string]struct {
			stdioServer
			Env map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	decodeStrict(t, "claude-code.mcp.json", &cfg)
	if len(cfg.MCPServers) != 1 {
		t.Fatalf("mcpServers has %d entries, want 1", len(cfg.MCPServers))
	}
	for _, s := range cfg.MCPServers {
		checkHostLaunch(t, "claude-code.mcp.json", s.stdioServer)
	}
}

func TestVSCode(t *testing.T) {
	var cfg struct {
		Servers map[string]stdioServer `json:"servers"`
	}
	decodeStrict(t, "vscode.mcp.json", &cfg)
	if len(cfg.Servers) != 1 {
		t.Fatalf("servers has %d entries, want 1", len(cfg.Servers))
	}
	for _, s := range cfg.Servers {
		checkHostLaunch(t, "vscode.mcp.json", s)
	}
}

func TestGitignore(t *testing.T) {
	b, err := Get("gitignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if !slices.Contains(lines, ".mcpepoch/") {
		t.Fatalf("gitignore has no line .mcpepoch/:\n%s", b)
	}
}

func TestHooksPassExitCode(t *testing.T) {
	for name, want := range map[string][]string{
		"mcpepoch.Taskfile.yml": {`{{.MCPEPOCH | default "mcpepoch"}} record --exit-code {{.EXIT_CODE | default 0}}`},
		"mcpepoch.mk":           {"MCPEPOCH ?= mcpepoch", "MCPEPOCH_HOOK = rc=$$?; $(MCPEPOCH) record --exit-code $$rc", "exit $$rc", `MCPEPOCH_RECORD = eval "$$MCPEPOCH_HOOK"`},
	} {
		b, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s does not contain %q", name, w)
			}
		}
	}
}

// TestExampleUsesTemplates checks that the Node example carries unmodified
// copies of the build hook templates, so that it shows and exercises them.
func TestExampleUsesTemplates(t *testing.T) {
	for _, name := range []string{"mcpepoch.Taskfile.yml", "mcpepoch.mk"} {
		want, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join("..", "examples", "inventory-node", name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from template %s; copy it with: mcpepoch template %s > %s", p, name, name, p)
		}
	}
}
