package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A build task whose defer runs mcpepoch record by name records each
// build itself, under dev too (MCPEPOCH=true does not reach it): dev says
// so once and does not record the build a second time.
func TestDevLeavesRecordingToHandWrittenHook(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	bin := testenv.Mcpepoch(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "Taskfile.yml"), `version: '3'
tasks:
  build:
    sources: [server.src]
    cmds:
      - defer: mcpepoch record --exit-code {{.EXIT_CODE | default 0}}
      - cp server.src server.sh
`)
	writeFile(t, filepath.Join(dir, "server.src"), "#!/bin/sh\nexec cat\n")
	writeFile(t, filepath.Join(dir, "mcpepoch.toml"), "label = \"shell\"\ncommand = [\"/bin/sh\", \"server.sh\"]\n")
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + filepath.Dir(task) + string(os.PathListSeparator) + os.Getenv("PATH"), "NO_COLOR=1"}

	dev := startDev(t, dir, env, bin)
	dev.waitFor(t, "build ok")
	writeFile(t, filepath.Join(dir, "server.src"), "#!/bin/sh\nexec cat -u\n")
	dev.waitFor(t, "changed: server.src")
	dev.waitFor(t, "build ok")
	dev.interrupt(t)

	out := dev.String()
	if n := strings.Count(out, "does not record it again"); n != 1 {
		t.Errorf("dev said %d times that the build records itself, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "Taskfile.yml:6: the build records itself") {
		t.Errorf("dev does not name the Taskfile line of the hand-written hook:\n%s", out)
	}
	b, err := os.ReadFile(layout.Builds(dir))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d builds in the builds log after two builds, want 2:\n%s\ndev:\n%s", n, b, out)
	}
}
