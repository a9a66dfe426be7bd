package project

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// write creates the files of a project in a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, dir string) *Project {
	t.Helper()
	p, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The bundled Node example: its Taskfile is read with go-task's own
// decoder, hook and all, and the plan matches how the example runs.
func TestNodeExample(t *testing.T) {
	p := read(t, filepath.Join("..", "examples", "inventory-node"))
	if p.Taskfile == nil || p.Taskfile.Path != "Taskfile.yml" {
		t.Fatalf("Taskfile: %+v", p.Taskfile)
	}
	build := p.Taskfile.Task("build")
	if build == nil {
		t.Fatal("no task build")
	}
	if want := []string{"src/**/*.ts", "package-lock.json", "tsconfig.json"}; !reflect.DeepEqual(build.Sources, want) {
		t.Errorf("sources = %q, want %q", build.Sources, want)
	}
	if !p.Taskfile.HasHook(build) {
		t.Errorf("the build task's defer of mcpepoch:record is not seen as the hook: %+v", build.Cmds)
	}
	if dev := p.Taskfile.Task("dev"); dev == nil || !dev.Watch {
		t.Errorf("task dev: %+v, want watch: true", dev)
	}
	if p.Makefile == nil || p.Makefile.Target("build") == nil || !p.Makefile.Target("build").HasHook() {
		t.Errorf("Makefile build target with $(MCPEPOCH_RECORD): %+v", p.Makefile)
	}
	pl := p.Plan()
	if pl.Kind != KindNode || pl.Entry != "dist/server.js" || !reflect.DeepEqual(pl.Command, []string{"node", "dist/server.js"}) {
		t.Errorf("plan = %+v", pl)
	}
	if pl.Build.Runner != "task" || pl.Build.Target != "build" {
		t.Errorf("build = %+v, want the task build", pl.Build)
	}
	if !reflect.DeepEqual(p.Lockfiles, []string{"package-lock.json"}) || !p.Config {
		t.Errorf("lockfiles %q, config %v", p.Lockfiles, p.Config)
	}
}

// go-task reads `cmd: X` with `defer: true` as a deferred command "true"
// and drops X; the line of such an entry is reported.
func TestDroppedDefer(t *testing.T) {
	dir := write(t, map[string]string{"Taskfile.yml": `version: '3'
tasks:
  build:
    cmds:
      - cmd: mcpepoch record
        defer: true
      - go build ./...
`})
	build := read(t, dir).Taskfile.Task("build")
	if !reflect.DeepEqual(build.DroppedDefers, []int{5}) {
		t.Errorf("DroppedDefers = %v, want [5]", build.DroppedDefers)
	}
	if build.Line != 3 {
		t.Errorf("Line = %d, want 3", build.Line)
	}
	if got := build.Cmds[0]; !got.Defer || got.Cmd != "true" {
		t.Errorf("go-task's reading of the entry: %+v (expected the deferred command \"true\")", got)
	}
}

func TestTSConfigWithComments(t *testing.T) {
	dir := write(t, map[string]string{
		"package.json": `{"name": "@acme/weather-mcp", "type": "module", "scripts": {"build": "tsc"}}`,
		"tsconfig.json": `{
  // compiler settings
  "compilerOptions": {
    "outDir": "./build", /* where tsc writes */
    "rootDir": "./lib",
    "noEmitOnError": true,
  },
}`,
	})
	p := read(t, dir)
	if p.TSConfig == nil || p.TSConfig.OutDir != "./build" || !p.TSConfig.NoEmitOnError {
		t.Fatalf("tsconfig = %+v", p.TSConfig)
	}
	pl := p.Plan()
	if pl.Label != "weather-mcp" || pl.Entry != "build/index.js" {
		t.Errorf("plan = %+v", pl)
	}
	if !reflect.DeepEqual(pl.Build.Command, []string{"npm", "run", "--silent", "build"}) {
		t.Errorf("build command = %q", pl.Build.Command)
	}
	if !strings.HasPrefix(pl.Sources[0], "lib/") {
		t.Errorf("sources = %q, want rootDir lib/ first", pl.Sources)
	}
}

func TestGoProject(t *testing.T) {
	dir := write(t, map[string]string{
		"go.mod":                "module example.com/weather\n\ngo 1.26\n",
		"go.sum":                "",
		"cmd/weather/main.go":   "package main\nfunc main() {}\n",
		"cmd/tool/main.go":      "// tool\npackage main\nfunc main() {}\n",
		"internal/x/x.go":       "package x\n",
		"cmd/notmain/lib.go":    "package lib\n",
		"cmd/weather/x_test.go": "package main\n",
	})
	p := read(t, dir)
	if !reflect.DeepEqual(p.GoMod.Mains, []string{"cmd/tool", "cmd/weather"}) {
		t.Fatalf("mains = %q", p.GoMod.Mains)
	}
	pl := p.Plan()
	if pl.Label != "weather" || !reflect.DeepEqual(pl.Command, []string{"./bin/weather"}) ||
		!reflect.DeepEqual(pl.Build.Command, []string{"go", "build", "-o", "bin/weather", "./cmd/weather"}) {
		t.Errorf("plan = %+v", pl)
	}
	if pl.Build.Runner != "" {
		t.Errorf("runner = %q with no Taskfile or Makefile", pl.Build.Runner)
	}
}

func TestPythonProject(t *testing.T) {
	dir := write(t, map[string]string{
		"pyproject.toml": "[project]\nname = \"weather\"\n[project.scripts]\nweather-server = \"weather.server:main\"\n",
		"uv.lock":        "",
	})
	pl := read(t, dir).Plan()
	if pl.Kind != KindPython || !reflect.DeepEqual(pl.Command, []string{"uv", "run", "weather-server"}) || pl.Entry != "weather/server.py" {
		t.Errorf("plan = %+v", pl)
	}
}

func TestMakefileTargets(t *testing.T) {
	m := parseMakefile("Makefile", []byte("VAR := x\ninclude mcpepoch.mk\n.PHONY: build dev\nbuild dev: deps\n\tgo build \\\n\t  ./...; $(MCPEPOCH_RECORD)\n%.o: %.c\n\tcc\nx = a:b\nrun: ; echo hi\n"))
	var names []string
	for _, tg := range m.Targets {
		names = append(names, tg.Name)
	}
	if !reflect.DeepEqual(names, []string{"build", "dev", "run"}) {
		t.Errorf("targets = %q", names)
	}
	if !reflect.DeepEqual(m.Includes, []string{"mcpepoch.mk"}) {
		t.Errorf("includes = %q", m.Includes)
	}
	if dev := m.Target("dev"); !dev.HasHook() {
		t.Errorf("dev recipe %q: hook not seen", dev.Recipe)
	}
	if m.Target("build").HasHook() {
		t.Errorf("build has no recipe of its own in this file, got %q", m.Target("build").Recipe)
	}
	if r := m.Target("run").Recipe; !reflect.DeepEqual(r, []string{"echo hi"}) {
		t.Errorf("run recipe = %q", r)
	}
}

// A build file that is not a regular file, or is not valid, is an error
// naming it; a FIFO is never opened (which would block).
func TestBadFiles(t *testing.T) {
	dir := write(t, map[string]string{"package.json": "{not json"})
	_, err := Read(dir)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(dir, "package.json") {
		t.Errorf("Read: %v, want a *FileError for package.json", err)
	}
	dir = t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "Taskfile.yml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Read with a FIFO Taskfile: %v", err)
	}
	dir = write(t, map[string]string{"Taskfile.yml": "tasks:\n  build:\n    cmds: [true]\n"})
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("Read of a Taskfile without version: %v", err)
	}
}

// A project with no build files of a language (a server.py on its own)
// takes every file as the build's sources, less what the build, go-task,
// git and the dependency trees write, so that a change of any file runs
// the build and its hook, and nothing that a build writes does.
func TestPlanNoLanguageSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.Plan()
	for _, want := range []string{"**/*", "!.mcpepoch/**", "!.task/**", "!.git/**", "!**/__pycache__/**"} {
		if !slices.Contains(pl.Sources, want) {
			t.Errorf("sources %q lack %q", pl.Sources, want)
		}
	}
}
