package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// `mcpepoch init --yes 2>&1 | head`: the reader of init's output goes
// away once it has read the plan and the diffs, and init's next write
// ends it with SIGPIPE. That write must come after the last file: the
// project is wired completely (a second init has nothing to change), never
// left with some of its files.
func TestInitReaderGoneLeavesProjectWired(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir := hookProject(t)
	env := testenv.Environ("NO_COLOR=1", "XDG_CONFIG_HOME="+filepath.Join(dir, "userconfig"))
	dry, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--dry-run", "--client", "claude-code")
	if code != 0 || !strings.Contains(dry.Combined, "dry run: ") {
		t.Fatalf("init --dry-run: exit %d\n%s", code, dry)
	}
	// Everything the dry run printed but its last line is what the real
	// run prints before it writes: the reader reads that much, like head.
	shown := strings.Count(strings.TrimSuffix(dry.Combined, "\n"), "\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "init", "--yes", "--client", "claude-code")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	br := bufio.NewReader(r)
	var read []string
	for len(read) < shown {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("init's output ended after %d of %d lines: %v\n%s", len(read), shown, err, strings.Join(read, ""))
		}
		read = append(read, line)
	}
	r.Close()
	err = cmd.Wait()
	t.Logf("init with its reader gone: %v", err)
	again, code := testenv.Run(t, dir, env, bin, "init", "--yes", "--dry-run", "--client", "claude-code")
	if code != 0 || !strings.Contains(again.Combined, "nothing to change: the project is wired") {
		t.Errorf("after init whose reader went away (%v), init finds the project not wired: exit %d\n%s", err, code, again)
	}
}
