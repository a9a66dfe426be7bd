package approval

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// What counts as a wrapper: exec-and-wait launchers do, the client and
// the ancestors a person's own terminal shares with it (a login or
// interactive shell, a terminal emulator, node running anything else) do not.
func TestWrapper(t *testing.T) {
	for _, c := range []struct {
		exe  string
		argv []string
		want bool
	}{
		{"/usr/bin/dash", []string{"sh", "-c", `"$@"; exit $?`, "sh", "mcpepoch"}, true},
		{"/usr/bin/bash", []string{"bash", "-lc", "mcpepoch host"}, true},
		{"/usr/bin/zsh", []string{"zsh", "-e", "-c", "x"}, true},
		{"/usr/bin/env", []string{"env", "A=1", "mcpepoch"}, true},
		{"/usr/bin/timeout", []string{"timeout", "60", "mcpepoch"}, true},
		{"/usr/bin/node", []string{"node", "/p/node_modules/.bin/mcpepoch", "host"}, true},
		{"/usr/bin/node", []string{"node", "--no-warnings", "/p/npm/mcpepoch/bin/mcpepoch.js", "host"}, true},
		{"/usr/bin/node", []string{"npm exec mcpepoch host"}, true},
		{"/usr/bin/node", []string{"node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "mcpepoch"}, true},
		{"/usr/bin/node", []string{"node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "exec", "mcpepoch"}, true},
		{"/usr/bin/bash", []string{"-bash"}, false},
		{"/usr/bin/bash", []string{"bash", "--login"}, false},
		{"/usr/bin/bash", []string{"bash", "script.sh", "-c"}, false},
		{"/usr/bin/node", []string{"node", "/opt/client/cli.js"}, false},
		{"/usr/bin/node", []string{"npm run dev"}, false},
		{"/usr/bin/node", []string{"node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "run", "dev"}, false},
		{"/usr/bin/gnome-terminal-server", []string{"/usr/libexec/gnome-terminal-server"}, false},
		{"/usr/bin/python3", []string{"python3", "client.py"}, false},
		{"", nil, false},
	} {
		if what, got := wrapper(c.exe, c.argv); got != c.want {
			t.Errorf("wrapper(%q, %q) = %q, %v, want %v", c.exe, c.argv, what, got, c.want)
		}
	}
}

// The launcher's hint adds an ancestor to the chain and is ignored
// otherwise: it never removes what the walk found.
func TestClientChainHint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	self, parent := os.Getpid(), os.Getppid()
	if c := clientChain(self, ""); len(c) != 1 || c[0].pid != self || c[0].what != "" {
		t.Fatalf("clientChain(test binary) = %v, want only it, as the client", c)
	}
	if c := clientChain(self, strconv.Itoa(parent)); len(c) < 2 || c[0].pid != self || !inChain(c, parent) {
		t.Errorf("clientChain with the parent as hint = %v, want self then %d", c, parent)
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	for _, hint := range []string{"1", "0", "-5", "x", strconv.Itoa(sleep.Process.Pid)} {
		if c := clientChain(self, hint); len(c) != 1 || c[0].pid != self {
			t.Errorf("clientChain with hint %q (not an ancestor) = %v, want only the walk's", hint, c)
		}
	}
}
