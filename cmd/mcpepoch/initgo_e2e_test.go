package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// goBuildProject writes a Go project (no dependencies) whose build file
// builds it into a binary named unlike the module, and returns its root
// and an environment with go, task and this mcpepoch on PATH.
func goBuildProject(t *testing.T, files map[string]string) (dir string, env []string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "go is not on PATH")
	}
	dir, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/nu5go\n\ngo 1.26\n")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {}\n")
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	path := strings.Join([]string{filepath.Dir(testenv.Mcpepoch(t)), filepath.Dir(goBin), os.Getenv("PATH")}, string(os.PathListSeparator))
	return dir, []string{"PATH=" + path, "NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
}

// init launches the binary the project's own build writes (the -o of the
// go build in its Taskfile task), so that the first build is recorded; and
// doctor names a launch command that is not what the build writes, and a
// build whose output exists with no build recorded.
func TestInitGoBinaryFromTaskfileBuild(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	bin := testenv.Mcpepoch(t)
	dir, env := goBuildProject(t, map[string]string{
		"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    cmds:\n      - go build -o bin/nu5-go .\n",
	})
	out, code := testenv.Run(t, dir, env, bin, "init", "--yes")
	if code != 0 || !strings.Contains(out.Combined, "launched as ./bin/nu5-go") || strings.Contains(out.Combined, "bin/nu5go") {
		t.Fatalf("init: exit %d, want the binary of go build -o bin/nu5-go\n%s", code, out)
	}
	if out, code := testenv.Run(t, dir, env, task, "build"); code != 0 || !strings.Contains(out.Combined, "build complete") {
		t.Fatalf("task build after init: exit %d, no build recorded\n%s", code, out)
	}
	if out, code := testenv.Run(t, dir, env, bin, "doctor"); code != 0 {
		t.Errorf("doctor after init and a build: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"nu5go\"\ncommand = [\"./bin/nu5go\"]\n")
	out, code = testenv.Run(t, dir, env, bin, "doctor")
	if code == 0 || !strings.Contains(out.Combined, "the host launches ./bin/nu5go, but the build writes bin/nu5-go") {
		t.Errorf("doctor with a command the build never writes: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"nu5go\"\ncommand = [\"./bin/nu5-go\"]\n")
	if err := os.Remove(filepath.Join(dir, ".mcpepoch", "manifest.toml")); err != nil {
		t.Fatal(err)
	}
	out, code = testenv.Run(t, dir, env, bin, "doctor")
	if code == 0 || !strings.Contains(out.Combined, "the build has run (bin/nu5-go written") {
		t.Errorf("doctor with the build's output and no build recorded: exit %d\n%s", code, out)
	}
}

// The same from a Makefile whose go build writes $(BIN).
func TestInitGoBinaryFromMakefileBuild(t *testing.T) {
	t.Parallel()
	mk := testenv.Make(t)
	bin := testenv.Mcpepoch(t)
	dir, env := goBuildProject(t, map[string]string{
		"Makefile": "BIN := bin/nu5-mk\n\n.PHONY: build\nbuild:\n\tgo build -o $(BIN) .\n",
	})
	out, code := testenv.Run(t, dir, env, bin, "init", "--yes")
	if code != 0 || !strings.Contains(out.Combined, "launched as ./bin/nu5-mk") {
		t.Fatalf("init: exit %d, want the binary of go build -o $(BIN)\n%s", code, out)
	}
	if out, code := testenv.Run(t, dir, env, mk, "build"); code != 0 || !strings.Contains(out.Combined, "build complete") {
		t.Fatalf("make build after init: exit %d, no build recorded\n%s", code, out)
	}
}

// A project with no build file, on a machine without go-task (the npm
// route, no Go): init wires make when make is there, and says how to get
// go-task without Go when neither is.
func TestInitWithoutGoTask(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	mk := testenv.Make(t)
	only := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(only, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mk, filepath.Join(only, "make")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want, next string }{
		{"make", only, "wiring a Makefile", "make dev"},
		{"neither", t.TempDir(), "npm i -D @go-task/cli", "task dev"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "package.json"), `{"name": "notes", "version": "1.0.0", "main": "server.js"}`)
			writeFile(t, filepath.Join(dir, "server.js"), "process.stdin.pipe(process.stdout)\n")
			env := []string{"PATH=" + c.path, "NO_COLOR=1", "XDG_CONFIG_HOME=" + filepath.Join(dir, "userconfig")}
			out, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--client", "claude-code")
			if code != 0 || !strings.Contains(out.Combined, c.want) || !strings.Contains(out.Combined, "  "+c.next+" ") {
				t.Fatalf("init without go-task on PATH: exit %d, want %q and %q\n%s", code, c.want, c.next, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "Makefile")); (err == nil) != (c.name == "make") {
				t.Errorf("Makefile written: %v, want %v", err == nil, c.name == "make")
			}
		})
	}
}
