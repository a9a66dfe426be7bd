package checkup

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/wire"
)

// selfPath stands for mcpepoch's absolute path: an executable file.
func selfPath(t *testing.T, dir string) string {
	p := filepath.Join(filepath.Dir(dir), "opt", "mcpepoch")
	writeFile(t, p, "#!/bin/sh\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// taskOnPath puts the go-task CLI on PATH for the test: a Taskfile
// project on a machine without it gets doctor's note that task is
// missing, which the tests of a clean project do not expect. Without go-task
// the test ends with [testenv.Missing]: skipped with the reason, failed in CI.
func taskOnPath(t *testing.T) {
	t.Helper()
	task := testenv.Task(t)
	t.Setenv("PATH", filepath.Dir(task)+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// wiredProject writes a fresh TypeScript project into dir and wires it as
// mcpepoch init does.
func wiredProject(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"package.json":  `{"name": "weather", "version": "1.0.0", "main": "index.js"}`,
		"tsconfig.json": "{\n  \"compilerOptions\": {\n    \"outDir\": \"dist\"\n  }\n}\n",
		"src/index.ts":  "console.log(1)\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	p, err := project.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wire.Wire(p, wire.Options{Hook: selfPath(t, dir), Mcpepoch: selfPath(t, dir), UserConfigDir: filepath.Join(dir, "userconfig")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Changes {
		writeFile(t, c.Path, string(c.New))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in dir/name, failing when old is absent.
func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q:\n%s", name, old, b)
	}
	writeFile(t, p, strings.Replace(string(b), old, new, 1))
}

func checkDir(t *testing.T, dir string) *Report {
	t.Helper()
	r, err := Check(dir, Options{UserConfigDir: filepath.Join(dir, "userconfig")})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recordBuild writes a manifest for the project's first build, as record
// would, creating the entry for the time it takes.
func recordBuild(t *testing.T, dir string) {
	t.Helper()
	entry := filepath.Join(dir, "dist", "index.js")
	writeFile(t, entry, "console.log(1)\n")
	id, err := build.Compute(build.Spec{Dir: dir, Command: []string{"node", "dist/index.js"}})
	if err != nil {
		t.Fatal(err)
	}
	publishBuild(t, dir, id)
}

// publishBuild writes the manifest of a build whose identity is id, as
// record would.
func publishBuild(t *testing.T, dir string, id *build.Identity) {
	t.Helper()
	now := time.Now()
	if err := os.MkdirAll(layout.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if sync, err := manifest.Publish(layout.Manifest(dir), manifest.New("weather", epoch.NewBuildID(now), now, 0, id, nil)); err != nil {
		t.Fatal(err)
	} else if err := sync(); err != nil {
		t.Fatal(err)
	}
}

// A project just wired has no problem, before and after its first build.
func TestCleanAfterInit(t *testing.T) {
	taskOnPath(t)
	dir := t.TempDir()
	wiredProject(t, dir)
	r := checkDir(t, dir)
	for _, p := range r.Problems {
		t.Errorf("problem after init: %s", p)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no build recorded yet") {
		t.Errorf("notes %q, want the one about the first build", r.Notes)
	}
	recordBuild(t, dir)
	r = checkDir(t, dir)
	for _, p := range r.Problems {
		t.Errorf("problem after the first build: %s", p)
	}
}

// Each problem, introduced into a wired project, is the one line doctor
// reports, naming where it is and with a fix.
func TestEachProblemNamed(t *testing.T) {
	const hook = "      " + wire.HookDefer + "\n"
	for _, tc := range []struct {
		name   string
		long   bool // a project root too long for a socket under it
		break_ func(t *testing.T, dir string)
		where  string
		what   string
	}{
		{name: "hook missing", where: "Taskfile.yml:", what: "does not run the hook",
			break_: func(t *testing.T, dir string) { edit(t, dir, "Taskfile.yml", hook, "") }},
		{name: "dropped defer", where: "Taskfile.yml:", what: "go-task drops the command",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, "Taskfile.yml", hook, "      - cmd: mcpepoch record\n        defer: true\n")
			}},
		{name: "hook after build", where: "Taskfile.yml:", what: "a failed build skips it",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, "Taskfile.yml", hook, "")
				edit(t, dir, "Taskfile.yml", "      - node_modules/.bin/tsc\n", "      - node_modules/.bin/tsc\n      - mcpepoch record\n")
			}},
		{name: "sources reach state", where: "Taskfile.yml:", what: "reaches .mcpepoch/",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, "Taskfile.yml", "      - mcpepoch.toml\n", "      - mcpepoch.toml\n      - '**/*'\n")
			}},
		{name: "config not in sources", where: "Taskfile.yml:", what: "mcpepoch.toml is not in the sources",
			break_: func(t *testing.T, dir string) { edit(t, dir, "Taskfile.yml", "      - mcpepoch.toml\n", "") }},
		{name: "client launches server", where: ".mcp.json: server weather", what: "launches the server directly",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"weather": {"command": "node", "args": ["dist/index.js"]}}}`)
			}},
		{name: "mcpepoch by name", where: filepath.Join(".cursor", "mcp.json") + ": server weather", what: "launches mcpepoch by name",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, filepath.Join(".cursor", "mcp.json"), `"command": "`+selfPath(t, dir)+`"`, `"command": "mcpepoch"`)
			}},
		{name: "host dir missing", where: filepath.Join(".cursor", "mcp.json") + ": server weather", what: "which is not a directory: the host exits at once",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, filepath.Join(".cursor", "mcp.json"), `"--dir", "`+dir+`"`, `"--dir", "`+dir+`-moved"`)
			}},
		{name: "host dir another project", where: ".mcp.json: server weather", what: "not this project's root",
			break_: func(t *testing.T, dir string) {
				other := filepath.Join(filepath.Dir(dir), "other")
				writeFile(t, filepath.Join(other, "mcpepoch.toml"), "label = \"other\"\n")
				edit(t, dir, ".mcp.json", `"--dir", "`+dir+`"`, `"--dir", "`+other+`"`)
			}},
		{name: "host dir missing per user", where: filepath.Join("userconfig", "Claude", "claude_desktop_config.json") + ": server gone", what: "which is not a directory",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "userconfig", "Claude", "claude_desktop_config.json"),
					`{"mcpServers": {"gone": {"command": "/opt/mcpepoch", "args": ["host", "--dir=/nonexistent/project"]}}}`)
			}},
		{name: "config dir relative", where: ".mcp.json: server weather", what: "no usable config directory (path in $XDG_CONFIG_HOME is relative",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, ".mcp.json", `"args": [`, `"env": {"XDG_CONFIG_HOME": "config"}, "args": [`)
			}},
		{name: "state dir moved", where: ".mcp.json: server weather", what: "its env sets XDG_STATE_HOME, which choose where this test build of mcpepoch host keeps the policy floor, the trust store and the copy of the audit head",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, ".mcp.json", `"args": [`, `"env": {"XDG_STATE_HOME": "/tmp/agent-state"}, "args": [`)
			}},
		{name: "config dir empty", where: filepath.Join(".cursor", "mcp.json") + ": server weather", what: "no usable config directory",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, filepath.Join(".cursor", "mcp.json"), `"args": [`, `"env": {"HOME": "", "XDG_CONFIG_HOME": ""}, "args": [`)
			}},
		{name: "entry missing", where: "mcpepoch.toml", what: "does not exist",
			break_: func(t *testing.T, dir string) {
				recordBuild(t, dir)
				os.Remove(filepath.Join(dir, "dist", "index.js"))
			}},
		{name: "build output unrecorded", where: "mcpepoch.toml", what: "the build has run (dist/index.js written",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "dist", "index.js"), "console.log(1)\n")
			}},
		{name: "run from source", where: "mcpepoch.toml", what: "runs from source",
			break_: func(t *testing.T, dir string) {
				edit(t, dir, "mcpepoch.toml", `["node", "dist/index.js"]`, `["node", "src/index.ts"]`)
			}},
		{name: "tsc emits on error", where: "tsconfig.json", what: "noEmitOnError",
			break_: func(t *testing.T, dir string) { edit(t, dir, "tsconfig.json", `"noEmitOnError": true,`, "") }},
		{name: "socket fallback", long: true, where: "sockets", what: "fallback is in use",
			break_: func(t *testing.T, dir string) {}},
		{name: "manifest corrupt", where: filepath.Join(".mcpepoch", "manifest.toml"), what: "does not verify",
			break_: func(t *testing.T, dir string) {
				writeFile(t, layout.Manifest(dir), "schema = [not toml\n")
			}},
		{name: "audit log broken", where: filepath.Join(".mcpepoch", "audit.jsonl"), what: "does not verify",
			break_: func(t *testing.T, dir string) {
				if err := layout.MkdirAll(layout.Dir(dir)); err != nil {
					t.Fatal(err)
				}
				l, err := audit.Open(layout.Audit(dir), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []string{"1", "2"} {
					if _, err := l.Append(audit.Event{Type: audit.TypeBuildRecorded, Fields: map[string]any{"build": n}}); err != nil {
						t.Fatal(err)
					}
				}
				l.Close()
				edit(t, dir, filepath.Join(".mcpepoch", "audit.jsonl"), `"build":"1"`, `"build":"3"`)
			}},
		{name: "stale host", where: "host ", what: "before mcpepoch.toml changed",
			break_: func(t *testing.T, dir string) { staleHost(t, dir) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortTemp(t)
			if tc.long {
				dir = filepath.Join(dir, strings.Repeat("a-long-directory-name/", 4))
			}
			wiredProject(t, dir)
			tc.break_(t, dir)
			r := checkDir(t, dir)
			if len(r.Problems) != 1 {
				t.Fatalf("%d problems, want 1:\n%s", len(r.Problems), problems(r))
			}
			p := r.Problems[0]
			if !strings.HasPrefix(p.Where, tc.where) || !strings.Contains(p.What, tc.what) || p.Fix == "" {
				t.Errorf("problem %q, want where %q, what containing %q, and a fix", p, tc.where, tc.what)
			}
		})
	}
}

// In a product build, an entry whose env sets XDG_CONFIG_HOME and
// XDG_STATE_HOME moves none of mcpepoch's directories: no problem, one
// note naming both and the directories the host uses (the account
// database's). The test build's own rule (the same entry is a problem)
// is in TestEachProblemNamed.
func TestEntryEnvMovesNothing(t *testing.T) {
	dir := shortTemp(t)
	wiredProject(t, dir)
	edit(t, dir, ".mcp.json", `"args": [`, `"env": {"XDG_CONFIG_HOME": "/tmp/agent-config", "XDG_STATE_HOME": "/tmp/agent-state"}, "args": [`)
	t.Setenv(userdirs.AsProductEnv, "1")
	cfg, err := userdirs.Config()
	if err != nil {
		t.Skipf("no account home here: %v", err)
	}
	r := checkDir(t, dir)
	for _, p := range r.Problems {
		t.Errorf("problem: %s", p)
	}
	var notes []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, ".mcp.json: server weather: ") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 1 {
		t.Fatalf("notes about the entry %q, want one\nall: %q", notes, r.Notes)
	}
	for _, want := range []string{"its env sets XDG_CONFIG_HOME, XDG_STATE_HOME, which moves none of mcpepoch's own directories",
		"XDG_CONFIG_HOME would name /tmp/agent-config/mcpepoch", "XDG_STATE_HOME would name /tmp/agent-state/mcpepoch", cfg, "account database"} {
		if runtime.GOOS == "darwin" && strings.HasPrefix(want, "XDG_CONFIG_HOME would") {
			continue // os.UserConfigDir never followed it there
		}
		if !strings.Contains(notes[0], want) {
			t.Errorf("the note does not say %q: %s", want, notes[0])
		}
	}
}

// A project's own config may serve a package of the project that has an
// mcpepoch.toml of its own (a monorepo): its host --dir is no problem.
func TestHostDirSubproject(t *testing.T) {
	taskOnPath(t)
	dir := shortTemp(t)
	wiredProject(t, dir)
	writeFile(t, filepath.Join(dir, "packages", "b", "mcpepoch.toml"), "label = \"b\"\n")
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"b": {"command": "`+selfPath(t, dir)+`", "args": ["host", "--dir", "packages/b"]}}}`)
	if r := checkDir(t, dir); len(r.Problems) != 0 {
		t.Fatalf("problems:\n%s", problems(r))
	}
}

// A server run as written (node server.mjs, no compile step) is its own
// source: its entry existing before any build is recorded is no build
// output left unrecorded.
func TestSourceEntryNotUnrecorded(t *testing.T) {
	dir := shortTemp(t)
	writeFile(t, filepath.Join(dir, "package.json"), `{"name": "plain", "version": "1.0.0", "main": "server.mjs"}`)
	writeFile(t, filepath.Join(dir, "server.mjs"), "console.log(1)\n")
	writeFile(t, filepath.Join(dir, "Makefile"), ".PHONY: build\nbuild:\n\ttrue\n")
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"plain\"\ncommand = [\"node\", \"server.mjs\"]\n")
	for _, p := range checkDir(t, dir).Problems {
		if strings.Contains(p.What, "no build is recorded") {
			t.Errorf("problem for an entry that is source: %s", p)
		}
	}
}

// shortTemp is a temporary directory with a short path, so that sockets
// fit under it.
func shortTemp(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func problems(r *Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// staleHost makes a live-looking host (a listening socket and an execution
// record) that started before mcpepoch.toml was last written.
func staleHost(t *testing.T, dir string) {
	run := epoch.NewRunID(time.Now())
	sock := filepath.Join(layout.Sock(dir), string(run)+".sock")
	if err := layout.MkdirAll(layout.Sock(dir)); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := layout.MkdirAll(layout.Hosts(dir)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, layout.HostRecord(dir, run), "{}\n")
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(sock, past, past); err != nil {
		t.Fatal(err)
	}
}

// A file the running server wrote into its dependency tree after the last
// build (server-memory's data file in node_modules) is named, with the fix.
func TestDataInDependencyTree(t *testing.T) {
	dir := t.TempDir()
	wiredProject(t, dir)
	writeFile(t, filepath.Join(dir, "node_modules", "pkg", "index.js"), "module.exports = 1\n")
	recordBuild(t, dir)
	if r := checkDir(t, dir); strings.Contains(problems(r), "node_modules") {
		t.Fatalf("a tree written by the build is reported: %s", problems(r))
	}
	data := filepath.Join(dir, "node_modules", "pkg", "dist", "memory.jsonl")
	writeFile(t, data, "{}\n")
	later := time.Now().Add(5 * time.Second)
	if err := os.Chtimes(data, later, later); err != nil {
		t.Fatal(err)
	}
	got := problems(checkDir(t, dir))
	if !strings.Contains(got, "node_modules/pkg/dist/memory.jsonl") || !strings.Contains(got, "MEMORY_FILE_PATH") {
		t.Fatalf("problems %q: want the data file named with the fix", got)
	}
}

// A file the launch command names that changed since the last build (a
// database the server writes, --db ./state.db) is named, with data as the
// fix; unchanged, it is not.
func TestArgFileWritten(t *testing.T) {
	dir := t.TempDir()
	wiredProject(t, dir)
	writeFile(t, filepath.Join(dir, "dist", "index.js"), "console.log(1)\n")
	writeFile(t, filepath.Join(dir, "state.db"), "one\n")
	id, err := build.Compute(build.Spec{Dir: dir, Command: []string{"node", "dist/index.js", "--db", "./state.db"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(id.Args) != 1 {
		t.Fatalf("args %+v, want state.db", id.Args)
	}
	publishBuild(t, dir, id)
	if got := problems(checkDir(t, dir)); strings.Contains(got, "state.db") {
		t.Fatalf("an argument file as built is reported: %s", got)
	}
	writeFile(t, filepath.Join(dir, "state.db"), "two\n")
	if got := problems(checkDir(t, dir)); !strings.Contains(got, "state.db") || !strings.Contains(got, `data = ["state.db"]`) {
		t.Fatalf("problems %q: want state.db named, with data as the fix", got)
	}
}

// A console script in the project's .venv with no code tree hashed: the
// package it imports through the install is outside the identity, and
// doctor says which package to name.
func TestConsoleScriptWithoutCode(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"pyproject.toml":      "[project]\nname = \"notes\"\n[project.scripts]\nnotes-py = \"notespy.server:main\"\n",
		"mcpepoch.toml":       "label = \"notes\"\ncommand = [\".venv/bin/notes-py\"]\n",
		"notespy/__init__.py": "",
		"notespy/server.py":   "def main(): pass\n",
		".venv/pyvenv.cfg":    "home = /usr/bin\n",
		".venv/bin/notes-py":  "#!/bin/sh\nexit 0\n",
	} {
		writeFile(t, filepath.Join(dir, name), content)
	}
	if err := os.Chmod(filepath.Join(dir, ".venv/bin/notes-py"), 0o755); err != nil {
		t.Fatal(err)
	}
	found := func() string {
		for _, p := range checkDir(t, dir).Problems {
			if strings.Contains(p.What, "console script") {
				return p.String()
			}
		}
		return ""
	}
	if p := found(); !strings.Contains(p, `code = ["notespy"]`) || !strings.Contains(p, ".venv/bin/notes-py") {
		t.Errorf("console script without code: problem %q, want one naming the package", p)
	}
	edit(t, dir, "mcpepoch.toml", "command =", "code = [\"notespy\"]\ncommand =")
	if p := found(); p != "" {
		t.Errorf("with code = [\"notespy\"]: %s", p)
	}
}

// A code tree beside the project is noted, one line naming it; code inside
// the project is not.
func TestCodeOutsideNoted(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "server")
	wiredProject(t, dir)
	writeFile(t, filepath.Join(base, "shared", "a.js"), "1;\n")
	edit(t, dir, "mcpepoch.toml", "command =", "code = [\"dist\", \"../shared\"]\ncommand =")
	var notes []string
	for _, n := range checkDir(t, dir).Notes {
		if strings.Contains(n, "outside the project") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "code ../shared lies outside the project") {
		t.Errorf("notes about code outside %q, want one naming ../shared", notes)
	}
}

// Two installs of one clean revision agree; a dirty or unknown revision
// does not count as the same.
func TestSameRevision(t *testing.T) {
	npm := "mcpepoch 0.1.0 (revision 036290d89006, go1.26.8 linux/amd64)"
	for _, c := range []struct {
		b    string
		want bool
	}{
		{"mcpepoch devel (module v0.0.0-x, revision 036290d89006, go1.26.8 linux/amd64)", true},
		{"mcpepoch devel (revision 036290d89006+dirty, go1.26.8 linux/amd64)", false},
		{"mcpepoch devel (revision 136290d89006, go1.26.8 linux/amd64)", false},
		{"mcpepoch devel (go1.26.8 linux/amd64)", false},
	} {
		if got := sameRevision(npm, c.b); got != c.want {
			t.Errorf("sameRevision(%q, %q) = %v, want %v", npm, c.b, got, c.want)
		}
	}
}

// A client config that launches a dynamically linked mcpepoch gets a note:
// its loader runs what LD_PRELOAD names, which a client config in the
// project sets. A static one (here a script: no ELF at all) gets none.
func TestDynamicallyLinkedNoted(t *testing.T) {
	dir := t.TempDir()
	wiredProject(t, dir)
	noted := func() bool {
		for _, n := range checkDir(t, dir).Notes {
			if strings.Contains(n, "is dynamically linked") && strings.Contains(n, "CGO_ENABLED=0") {
				return true
			}
		}
		return false
	}
	if noted() {
		t.Fatal("a launched mcpepoch that is no ELF is noted as dynamically linked")
	}
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to stand in for a dynamically linked mcpepoch: %v", err)
	}
	if !dynamicELF("/bin/true") {
		t.Skip("/bin/true is not dynamically linked here")
	}
	writeFile(t, selfPath(t, dir), string(b))
	if !noted() {
		t.Errorf("notes %q: want the dynamically linked mcpepoch noted", checkDir(t, dir).Notes)
	}
}
