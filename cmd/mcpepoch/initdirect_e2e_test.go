package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A client config entry that launches the server directly beside the
// entry init wrote: doctor's fix is one that works (init leaves the entry,
// two entries would start two hosts), and following it leaves doctor
// clean, not a loop between doctor and init.
func TestDoctorFixForDirectEntryBesideHost(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	mk := testenv.Make(t)
	dir := hookProject(t)
	env := []string{"PATH=" + filepath.Dir(mk) + string(os.PathListSeparator) + os.Getenv("PATH"), "NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
	if out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	if out, code := testenv.Run(t, dir, env, mk, "build"); code != 0 {
		t.Fatalf("make build: exit %d\n%s", code, out)
	}
	cfgPath := filepath.Join(dir, ".mcp.json")
	wired, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]map[string]any
	if err := json.Unmarshal(wired, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["mcpServers"]["direct"] = map[string]any{"command": "/bin/sh", "args": []string{"server.sh"}}
	b, _ := json.Marshal(cfg)
	writeFile(t, cfgPath, string(b))
	out, code := testenv.Run(t, dir, env, bin, "doctor")
	fix := "fix: delete the entry direct from .mcp.json"
	if code == 0 || !strings.Contains(out.Combined, "beside the entry shell, which serves the project through mcpepoch host") || !strings.Contains(out.Combined, fix) {
		t.Fatalf("doctor with a direct entry beside the host's: exit %d, want %q\n%s", code, fix, out)
	}
	if out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code"); code != 0 || !strings.Contains(out.Combined, "nothing to change") {
		t.Errorf("init with a direct entry beside the host's: exit %d, want nothing changed (two hosts)\n%s", code, out)
	}
	// The same when the host's entry finds mcpepoch through npx: the
	// direct entry is to be deleted, init would not rewrite it.
	shell := cfg["mcpServers"]["shell"]
	cfg["mcpServers"]["shell"] = map[string]any{"command": "npx", "args": []string{"mcpepoch", "host"}}
	b, _ = json.Marshal(cfg)
	writeFile(t, cfgPath, string(b))
	if out, _ := testenv.Run(t, dir, env, bin, "doctor"); !strings.Contains(out.Combined, fix) || strings.Contains(out.Combined, "server direct: launches the server directly, not through mcpepoch host") {
		t.Errorf("doctor with a direct entry beside an npx host entry: want %q\n%s", fix, out)
	}
	cfg["mcpServers"]["shell"] = shell
	delete(cfg["mcpServers"], "direct")
	b, _ = json.Marshal(cfg)
	writeFile(t, cfgPath, string(b))
	if out, code := testenv.Run(t, dir, env, bin, "doctor"); code != 0 {
		t.Errorf("doctor after following its fix: exit %d\n%s", code, out)
	}
}

// The copies init keeps of the client configs it merged are not left for
// git to show, and a plain script server is shown without a blank kind.
func TestInitBackupsIgnored(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(t, "git is not on PATH")
	}
	dir := hookProject(t)
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"other": {"command": "/bin/true"}}}`)
	env := []string{"NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
	if out, code := testenv.Run(t, dir, env, gitBin, "init", "-q"); code != 0 {
		t.Fatalf("git init: exit %d\n%s", code, out)
	}
	out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code", "--command", "/bin/sh server.sh")
	if code != 0 || !strings.Contains(out.Combined, "server shell: launched as /bin/sh server.sh") {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json.bak")); err != nil {
		t.Fatalf("no backup of the merged .mcp.json: %v", err)
	}
	st, _ := testenv.Run(t, dir, env, gitBin, "status", "--porcelain", "--untracked-files=all")
	if strings.Contains(st.Stdout, ".bak") {
		t.Errorf("git status shows init's backup:\n%s", st.Stdout)
	}
}
