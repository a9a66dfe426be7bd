package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// init in a Taskfile project on a machine without go-task says how to get
// it in its next steps, before task dev fails with "task: command not
// found"; with task on PATH it says nothing of the kind.
func TestInitNamesGoTaskWhenMissing(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	task := testenv.Task(t)
	const advice = "get go-task first"
	for _, tc := range []struct {
		name, path string
		want       bool
	}{
		{"without task", "/usr/bin:/bin", true},
		{"with task", filepath.Dir(task) + ":/usr/bin:/bin", false},
	} {
		dir := t.TempDir()
		for name, content := range map[string]string{
			"package.json":  `{"name": "weather", "version": "1.0.0", "main": "dist/index.js"}`,
			"tsconfig.json": "{\n  \"compilerOptions\": {\n    \"outDir\": \"dist\"\n  }\n}\n",
			"src/index.ts":  "console.log(1)\n",
			"Taskfile.yml":  "version: '3'\ntasks:\n  build:\n    sources: [src/**/*.ts]\n    cmds:\n      - node_modules/.bin/tsc\n",
		} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, code := testenv.Run(t, dir, []string{"PATH=" + tc.path}, bin, "init", "--yes", "--client", "claude-code")
		if code != 0 {
			t.Fatalf("%s: init: exit %d\n%s", tc.name, code, out)
		}
		got := strings.Contains(out.Stderr, advice) && strings.Contains(out.Stderr, "go install github.com/go-task/task/v3/cmd/task@")
		if got != tc.want {
			t.Errorf("%s: init's output names how to get go-task: %v, want %v\n%s", tc.name, got, tc.want, out.Stderr)
		}
	}
}
