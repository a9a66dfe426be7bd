package wire

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/project"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// wireAndWrite wires dir, writes every change and returns the wiring.
func wireAndWrite(t *testing.T, dir string, o Options) *Wiring {
	t.Helper()
	p, err := project.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mcpepoch == "" {
		o.Mcpepoch = "/opt/mcpepoch/bin/mcpepoch"
	}
	o.UserConfigDir = filepath.Join(dir, "userconfig")
	w, err := Wire(p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Changes {
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// wired reads dir back and checks what every wiring must leave: a build
// task with the hook that go-task keeps, mcpepoch.toml in its sources and
// nothing under .mcpepoch/ reachable, the manifest in its generates, a dev
// task running mcpepoch dev; and a second wiring that changes nothing.
func wired(t *testing.T, dir string, o Options) *project.Project {
	t.Helper()
	p, err := project.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Taskfile != nil {
		b := p.Taskfile.Task("build")
		if b == nil || !p.Taskfile.HasHook(b) || len(b.DroppedDefers) > 0 {
			t.Errorf("build task %+v: no hook go-task keeps\n%s", b, p.Taskfile.Src)
		} else {
			if !slices.Contains(b.Sources, "mcpepoch.toml") || reaches(b.Sources) {
				t.Errorf("build sources %q", b.Sources)
			}
			if !slices.Contains(b.Generates, ManifestGenerate) {
				t.Errorf("build generates %q", b.Generates)
			}
		}
		if d := p.Taskfile.Task("dev"); d == nil || !IsDevTask(d) {
			t.Errorf("dev task %+v", d)
		}
	}
	if !p.Config {
		t.Error("no mcpepoch.toml")
	}
	if o.Mcpepoch == "" {
		o.Mcpepoch = "/opt/mcpepoch/bin/mcpepoch"
	}
	o.UserConfigDir = filepath.Join(dir, "userconfig")
	w, err := Wire(p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Changes {
		t.Errorf("second run changes %s:\n%s", c.Rel, c.New)
	}
	return p
}

func TestFreshTypeScriptProject(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"package.json":  `{"name": "weather", "version": "1.0.0", "main": "index.js", "scripts": {"test": "echo"}}`,
		"tsconfig.json": "{\n  \"compilerOptions\": {\n    \"outDir\": \"dist\"\n  }\n}\n",
		"src/index.ts":  "console.log(1)\n",
	})
	w := wireAndWrite(t, dir, Options{})
	if w.Plan.Entry != "dist/index.js" || !slices.Equal(w.Plan.Command, []string{"node", "dist/index.js"}) {
		t.Errorf("plan %+v", w.Plan)
	}
	p := wired(t, dir, Options{})
	if !p.TSConfig.NoEmitOnError {
		t.Error("tsconfig.json: noEmitOnError not set")
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if !strings.Contains(string(b), `"command": "/opt/mcpepoch/bin/mcpepoch"`) || !strings.Contains(string(b), `"args": ["host", "--dir", "`+dir+`"]`) {
		t.Errorf(".mcp.json:\n%s", b)
	}
	for _, f := range []string{".vscode/mcp.json", ".cursor/mcp.json", ".gitignore", "mcpepoch.Taskfile.yml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "userconfig")); err == nil {
		t.Error("Claude Desktop's config written without --client claude-desktop")
	}
}

const commentedTaskfile = `# my tasks
version: '3'

vars:
  OUT: dist

tasks:
  # compile
  build:
    sources: [src/**/*.ts, '**/*']  # everything
    cmds:
      - cmd: mcpepoch record
        defer: true
      - tsc   # the compiler
      - mcpepoch record

  dev:
    watch: true
    cmds:
      - task: build

  lint:
    cmds: [eslint .]
`

// A Taskfile with comments, flow lists, the dropped-defer trap and a hook
// after the build: the edits keep every comment and task in place, replace
// both broken hooks with the defer, exclude .mcpepoch/ from the '**/*'
// glob and turn dev into mcpepoch dev.
func TestTaskfileEditedInPlace(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"Taskfile.yml": commentedTaskfile, "package.json": `{"name": "w", "main": "dist/server.js"}`})
	w := wireAndWrite(t, dir, Options{Hook: "node_modules/.bin/mcpepoch"})
	p := wired(t, dir, Options{Hook: "node_modules/.bin/mcpepoch"})
	src := string(p.Taskfile.Src)
	for _, keep := range []string{"# my tasks", "# compile", "# everything", "# the compiler", "OUT: dist", "lint:", "cmds: [eslint .]"} {
		if !strings.Contains(src, keep) {
			t.Errorf("lost %q:\n%s", keep, src)
		}
	}
	if strings.Contains(src, "defer: true") || strings.Count(src, "record") != 1 {
		t.Errorf("broken hooks left in:\n%s", src)
	}
	if !strings.Contains(src, `MCPEPOCH: '{{.MCPEPOCH | default "node_modules/.bin/mcpepoch"}}'`) {
		t.Errorf("no MCPEPOCH var:\n%s", src)
	}
	if i, j := strings.Index(src, "build:"), strings.Index(src, "lint:"); i > j {
		t.Errorf("task order changed:\n%s", src)
	}
	if len(w.Notes) == 0 {
		t.Error("no note about the removed hooks")
	}
}

// A build task whose cmds are a flow list on one line becomes a block list
// with the hook first and every other command after it, as written and in
// order (a quoted item, a task call); a plain record command in it goes,
// as in a block list. One with a comment after the list is left to the
// person, with the line to add.
func TestTaskfileFlowCmds(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    cmds: [go vet ./..., 'go build -o bin/w .', {task: gen}, mcpepoch record]\n    sources: ['**/*.go']\n  gen:\n    cmds: [go generate ./...]\n",
		"go.mod":       "module example.com/w\n\ngo 1.26\n",
		"main.go":      "package main\nfunc main() {}\n",
	})
	w := wireAndWrite(t, dir, Options{})
	p := wired(t, dir, Options{})
	var got []string
	for _, c := range p.Taskfile.Task("build").Cmds {
		switch {
		case c.Defer:
			got = append(got, "defer "+c.Task)
		case c.Task != "":
			got = append(got, "task "+c.Task)
		default:
			got = append(got, c.Cmd)
		}
	}
	if want := []string{"defer mcpepoch:record", "go vet ./...", "go build -o bin/w .", "task gen"}; !slices.Equal(got, want) {
		t.Errorf("build cmds %q, want %q:\n%s", got, want, p.Taskfile.Src)
	}
	if !strings.Contains(string(p.Taskfile.Src), "cmds: [go generate ./...]") || len(w.Notes) == 0 {
		t.Errorf("another task's flow list changed, or no note:\n%s\n%q", p.Taskfile.Src, w.Notes)
	}

	dir = t.TempDir()
	write(t, dir, map[string]string{
		"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    cmds: [go build -o bin/w .] # [sic]\n",
		"go.mod":       "module example.com/w\n\ngo 1.26\n",
		"main.go":      "package main\nfunc main() {}\n",
	})
	pr, err := project.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Wire(pr, Options{Mcpepoch: "/opt/mcpepoch/bin/mcpepoch", UserConfigDir: filepath.Join(dir, "userconfig")}); err == nil || !strings.Contains(err.Error(), "add the hook by hand") {
		t.Errorf("a flow list with a comment after it: %v, want the hook to add by hand", err)
	}
}

// Existing client configs keep every key and server; a server entry that
// launched the server directly is turned into the host, under its name,
// with a backup of the old file.
func TestClientConfigMerged(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"package.json": `{"name": "w", "main": "dist/server.js", "scripts": {"build": "tsc"}}`,
		".mcp.json": `{"zeta": 1, "mcpServers": {"other": {"command": "npx", "args": ["x"], "env": {"K": "v"}},
			"weather-direct": {"command": "node", "args": ["dist/server.js"], "env": {"TOKEN_FILE": "t"}}}, "alpha": [1, 2.50]}`,
	})
	w := wireAndWrite(t, dir, Options{Clients: []Client{ClaudeCode, ClaudeDesktop}})
	var mc *Change
	for i := range w.Changes {
		if w.Changes[i].Rel == ".mcp.json" {
			mc = &w.Changes[i]
		}
	}
	if mc == nil || !mc.Backup {
		t.Fatalf(".mcp.json change %+v, want one with a backup", mc)
	}
	got := string(mc.New)
	for _, want := range []string{`"zeta": 1`, `"alpha": [1, 2.50]`, `"other"`, `"K": "v"`, `"weather-direct"`, `"TOKEN_FILE": "t"`, `"command": "/opt/mcpepoch/bin/mcpepoch"`} {
		if !strings.Contains(got, want) {
			t.Errorf("merged .mcp.json lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"w"`) || strings.Index(got, "zeta") > strings.Index(got, "alpha") {
		t.Errorf("a second entry was added, or keys reordered:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "userconfig", "Claude", "claude_desktop_config.json")); err != nil {
		t.Errorf("Claude Desktop: %v", err)
	}
	wired(t, dir, Options{Clients: []Client{ClaudeCode, ClaudeDesktop}})
}

func TestMakefileProject(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"go.mod":   "module example.com/weather\n\ngo 1.26\n",
		"main.go":  "package main\nfunc main() {}\n",
		"Makefile": "# tools\nBIN = bin/weather\n\nbuild:\n\tgo vet ./...\n\tgo build -o $(BIN) \\\n\t  .\n\ndev:\n\twatchexec make build\n",
	})
	w := wireAndWrite(t, dir, Options{})
	p := wired(t, dir, Options{})
	mf := p.Makefile
	if !mf.Target("build").HasHook() || !IsDevTarget(mf.Target("dev")) || !slices.Contains(mf.Includes, MCPEPOCHMk) {
		t.Errorf("Makefile:\n%s", mf.Src)
	}
	if !strings.Contains(string(mf.Src), "\t  .; $(MCPEPOCH_RECORD)\n") || strings.Contains(string(mf.Src), "watchexec") {
		t.Errorf("hook not on the recipe's last line, or dev not replaced:\n%s", mf.Src)
	}
	if p.Taskfile != nil || len(w.Notes) == 0 {
		t.Errorf("taskfile %v, notes %q", p.Taskfile, w.Notes)
	}
}

func TestPythonProject(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"pyproject.toml": "[project]\nname = \"weather\"\n[project.scripts]\nweather-server = \"weather.server:main\"\n",
		"uv.lock":        "",
	})
	w := wireAndWrite(t, dir, Options{})
	if !slices.Equal(w.Plan.Command, []string{"uv", "run", "weather-server"}) {
		t.Errorf("command %q", w.Plan.Command)
	}
	p := wired(t, dir, Options{})
	if b := p.Taskfile.Task("build"); !slices.Contains(b.Sources, "uv.lock") {
		t.Errorf("sources %q", b.Sources)
	}
}

// A config that already launches the host for the project, formatted its
// own way, is left byte for byte.
func TestClientConfigAlreadyWired(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"package.json":     `{"name": "w", "main": "dist/server.js"}`,
		".cursor/mcp.json": `{"mcpServers":{"w":{"command":"/opt/mcpepoch/bin/mcpepoch","args":["host","--dir","` + dir + `"]}}}`,
	})
	p, err := project.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Wire(p, Options{Mcpepoch: "/opt/mcpepoch/bin/mcpepoch", Clients: []Client{Cursor}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Changes {
		if c.Rel == filepath.Join(".cursor", "mcp.json") {
			t.Errorf("rewrote a config that was already right:\n%s", c.New)
		}
	}
}

// A console script in .venv reaches the project's package only through
// the install: init names the package as code, so that its edits are a
// new epoch, and the build's sources leave .venv out. Without a .venv
// yet, init says what creates it.
func TestPythonConsoleScriptCode(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"pyproject.toml":      "[project]\nname = \"notes\"\n[project.scripts]\nnotes-py = \"notespy.server:main\"\n",
		"notespy/__init__.py": "",
		"notespy/server.py":   "def main(): pass\n",
	})
	w := wireAndWrite(t, dir, Options{})
	if !slices.Equal(w.Plan.Command, []string{".venv/bin/notes-py"}) || !slices.Equal(w.Plan.Code, []string{"notespy"}) {
		t.Errorf("command %q, code %q", w.Plan.Command, w.Plan.Code)
	}
	if !slices.ContainsFunc(w.Plan.Reasons, func(r string) bool { return strings.Contains(r, "python3 -m venv .venv") }) {
		t.Errorf("no word of what creates .venv: %q", w.Plan.Reasons)
	}
	cfg, err := config.Load(dir)
	if err != nil || !slices.Equal(cfg.Code, []string{"notespy"}) {
		t.Errorf("mcpepoch.toml code %v, %v", cfg.Code, err)
	}
	p := wired(t, dir, Options{})
	if b := p.Taskfile.Task("build"); !slices.Contains(b.Sources, "notespy/**/*.py") || slices.Contains(b.Sources, "**/*.py") {
		t.Errorf("sources %q: want the package's, not every .py under the root (.venv)", b.Sources)
	}

	// No package to name: every .py, but not .venv's.
	dir = t.TempDir()
	write(t, dir, map[string]string{
		"pyproject.toml":   "[project]\nname = \"notes\"\n[project.scripts]\nnotes-py = \"notesmod:main\"\n",
		".venv/bin/python": "",
	})
	w = wireAndWrite(t, dir, Options{})
	if len(w.Plan.Code) != 0 || slices.ContainsFunc(w.Plan.Reasons, func(r string) bool { return strings.Contains(r, "no .venv yet") }) {
		t.Errorf("code %q, reasons %q", w.Plan.Code, w.Plan.Reasons)
	}
	p = wired(t, dir, Options{})
	if b := p.Taskfile.Task("build"); !slices.Contains(b.Sources, "**/*.py") || !slices.Contains(b.Sources, "!.venv/**") {
		t.Errorf("sources %q: want **/*.py without .venv", b.Sources)
	}
}
