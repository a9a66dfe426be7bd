package host

import "testing"

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
