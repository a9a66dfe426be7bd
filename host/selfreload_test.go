package host_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestSelfReloadingCommandRefused: a launch command that reloads code
// in-process is refused before anything starts, saying why and what to
// run instead.
func TestSelfReloadingCommandRefused(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	for _, tc := range []struct {
		command []string
		tool    string
		instead string // the person's own command without the flag
	}{
		{[]string{"node", "--watch", "s.js"}, "node --watch", "drop --watch: run node s.js,"},
		{[]string{"node", "--watch-path", "src", "--watch", "dist/main.js"}, "node --watch", "drop --watch: run node dist/main.js,"},
		{[]string{"npx", "tsx", "watch", "src/server.ts"}, "tsx watch", ""},
		{[]string{"nodemon", "dist/server.js"}, "nodemon", ""},
		{[]string{"bun", "--watch", "src/server.ts"}, "bun --watch", "drop --watch: run bun src/server.ts,"},
		{[]string{"deno", "run", "--watch=src", "src/server.ts"}, "deno --watch", "drop --watch: run deno run src/server.ts,"},
		{[]string{"uv", "run", "uvicorn", "app:app", "--reload"}, "uvicorn --reload", "drop --reload: run uv run uvicorn app:app,"},
		{[]string{"air"}, "air", ""},
		{[]string{"sh", "-c", "watchexec -e go -- go run ."}, "watchexec", ""},
	} {
		out, code := testenv.Run(t, p.dir, nil, mcpepoch(t), p.hostArgs(nil, tc.command...)...)
		if code != 2 || !strings.Contains(out.Stderr, "reloads code in-process ("+tc.tool+")") || !strings.Contains(out.Stderr, "allow_self_reload = true") {
			t.Errorf("mcpepoch host -- %s: exit %d, want 2 and an error naming %s:\n%s", strings.Join(tc.command, " "), code, tc.tool, out)
		}
		if !strings.Contains(out.Stderr, tc.instead) {
			t.Errorf("mcpepoch host -- %s: the fix is not the command without the flag (%q):\n%s", strings.Join(tc.command, " "), tc.instead, out)
		}
		if strings.Contains(out.Stderr, "started pid") {
			t.Errorf("mcpepoch host -- %s started the server:\n%s", strings.Join(tc.command, " "), out)
		}
	}
}

// TestSelfReloadWatchedAsEpochChange: with allow_self_reload = true, a
// process under the server that is replaced (as node --watch or nodemon
// replace theirs) begins a new epoch, announced with list_changed.
func TestSelfReloadWatchedAsEpochChange(t *testing.T) {
	t.Parallel()
	needProc(t)
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "allow_self_reload = true\ncommand = [\"sh\", \"./server.sh\"]\n\n[grants]\nexempt = [\"**\"]\n")
	// A reloader in miniature: the shell starts the server again whenever
	// it exits, on the same stdin and stdout.
	c := startRaw(t, p, nil, "sh", "-c", "while :; do ./bin/fixture; done")
	c.initialize()
	c.listTools()
	before := p.status().Execution.Epoch
	pids := processesOf(t, p.path("bin/fixture"))
	if len(pids) != 1 {
		t.Fatalf("%d fixture processes, want 1", len(pids))
	}
	// The host counts a process as replaced once it had been seen at two
	// looks in a row (250 ms apart): a helper that lives briefly is not.
	// Two seconds leave room for a loaded machine.
	time.Sleep(2 * time.Second)
	syscall.Kill(pids[0], syscall.SIGKILL)
	deadline := time.Now().Add(waitLong)
	for {
		st := p.status()
		if st.Execution != nil && st.Execution.Epoch != before && st.State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("epoch still %s %s after the process under the server was replaced\n%s", before, waitLong, c.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.waitNotifications("notifications/tools/list_changed", 1, waitLong)
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("version in the new epoch: %v", r)
	}
}
