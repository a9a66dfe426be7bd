package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A Go project where `npm i -D mcpepoch` (or `npm init -y` first) wrote a
// package.json: init launches the binary the Taskfile's go build writes,
// not a Node entry the build never makes.
func TestInitGoProjectWithNpmPackageJSON(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	for name, pkg := range map[string]string{
		"devDependencies": `{"devDependencies": {"mcpepoch": "file:../pack/mcpepoch-0.1.0.tgz", "@mcpepoch/linux-x64": "file:../pack/p.tgz"}}`,
		"npm-init": `{"name": "nu6go", "version": "1.0.0", "main": "index.js", "scripts": {"test": "echo \"Error: no test specified\" && exit 1"},
			"devDependencies": {"mcpepoch": "^0.1.0"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, env := goBuildProject(t, map[string]string{
				"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    cmds:\n      - go build -o bin/server .\n",
				"package.json": pkg,
			})
			out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code")
			if code != 0 || !strings.Contains(out.Combined, "go, launched as ./bin/server") {
				t.Fatalf("init: exit %d, want the Go binary the build writes\n%s", code, out)
			}
			b, err := os.ReadFile(filepath.Join(dir, "mcpepoch.toml"))
			if err != nil || !strings.Contains(string(b), `command = ["./bin/server"]`) {
				t.Errorf("mcpepoch.toml (%v):\n%s", err, b)
			}
		})
	}
}

// init --command on a wired project replaces the command in mcpepoch.toml,
// and the summary no longer shows the guessed entry.
func TestInitCommandReplacesWiredCommand(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir, env := goBuildProject(t, map[string]string{
		"Taskfile.yml":  "version: '3'\ntasks:\n  build:\n    cmds:\n      - go build -o bin/server .\n",
		"mcpepoch.toml": "# kept\nlabel = \"nu6\"\ncommand = [\"node\", \"dist/index.js\"]\n\n[grants]\nexempt = [\"echo\"]\n",
	})
	out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code", "--command", "./bin/server")
	if code != 0 || strings.Contains(out.Combined, "nothing to change") || strings.Contains(out.Combined, "entry: package.json") {
		t.Fatalf("init --command: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "mcpepoch.toml"))
	want := "# kept\nlabel = \"nu6\"\ncommand = [\"./bin/server\"]\n\n[grants]\nexempt = [\"echo\"]\n"
	if err != nil || string(b) != want {
		t.Errorf("mcpepoch.toml (%v):\n%s\nwant:\n%s", err, b, want)
	}

	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "command = [\n  \"node\",\n  \"dist/index.js\",\n]\n")
	out, code = testenv.Run(t, dir, env, bin, "init", "--yes", "--command", "./bin/server")
	if code == 0 || !strings.Contains(out.Combined, `line 1: command spans several lines`) || !strings.Contains(out.Combined, `command = ["./bin/server"]`) {
		t.Errorf("init --command over a multi-line command: exit %d, want the line and what to write\n%s", code, out)
	}
}

// doctor names a launch command the build never writes before any build
// was recorded (a Node entry while the build writes a Go binary), and a
// missing console script of .venv, instead of "no problems found".
func TestDoctorLaunchNoBuildMakesIt(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir, env := goBuildProject(t, map[string]string{
		"Taskfile.yml":  "version: '3'\ntasks:\n  build:\n    cmds:\n      - go build -o bin/server .\n",
		"mcpepoch.toml": "label = \"nu6\"\ncommand = [\"node\", \"dist/index.js\"]\n",
	})
	out, code := testenv.Run(t, dir, env, bin, "doctor")
	if code == 0 || !strings.Contains(out.Combined, "but the build writes the Go binary bin/server") {
		t.Errorf("doctor, node entry and a go build: exit %d\n%s", code, out)
	}

	py, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(py, "pyproject.toml"), "[project]\nname = \"notes6\"\nversion = \"0.1\"\n[project.scripts]\nnotes6 = \"notes6.server:main\"\n")
	writeFile(t, filepath.Join(py, "notes6", "server.py"), "def main():\n    pass\n")
	writeFile(t, filepath.Join(py, "Makefile"), ".PHONY: build\nbuild:\n\tpython3 -m compileall -q notes6\n")
	writeFile(t, filepath.Join(py, "mcpepoch.toml"), "label = \"notes6\"\ncommand = [\".venv/bin/notes6\"]\ncode = [\"notes6\"]\n")
	out, code = testenv.Run(t, py, env, bin, "doctor")
	if code == 0 || !strings.Contains(out.Combined, "the command .venv/bin/notes6 does not exist") || !strings.Contains(out.Combined, "pip install -e .") {
		t.Errorf("doctor, missing console script: exit %d\n%s", code, out)
	}
}

// doctor runs the mcpepoch the hook and each client config run: one that
// does not run (here a truncated download) is an incomplete install, named
// with its file and the fix.
func TestDoctorIncompleteInstall(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	only := filepath.Join(t.TempDir(), "only")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(only, "mcpepoch"), string(b[:4096]))
	if err := os.Chmod(filepath.Join(only, "mcpepoch"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, env := goBuildProject(t, map[string]string{
		"Makefile": ".PHONY: build\nbuild:\n\tgo build -o bin/server .\n",
	})
	if out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code", "--mcpepoch", filepath.Join(only, "mcpepoch")); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	out, code := testenv.Run(t, dir, env, bin, "doctor")
	for _, want := range []string{
		"Makefile:2: the hook runs " + filepath.Join(only, "mcpepoch") + ", an incomplete install",
		".mcp.json: server nu5go: launches " + filepath.Join(only, "mcpepoch") + ", an incomplete install",
		"install it again (go install github.com/mcpepoch/mcpepoch/cmd/mcpepoch@latest",
	} {
		if code == 0 || !strings.Contains(out.Combined, want) {
			t.Errorf("doctor with a truncated mcpepoch: exit %d, want %q\n%s", code, want, out)
		}
	}
}
