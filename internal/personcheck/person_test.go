package personcheck

import "testing"

// TestIsHostProcess: a host is recognised by its command (host or dev)
// run by this executable, or by a binary named mcpepoch (the front, which
// becomes the core with argv unchanged) or mcpepoch-core (another install's
// core, started by itself).
func TestIsHostProcess(t *testing.T) {
	t.Parallel()
	me := "/opt/a/mcpepoch-core"
	for _, c := range []struct {
		exe  string
		argv []string
		want bool
	}{
		{"/opt/a/mcpepoch-core", []string{"/opt/a/mcpepoch", "host"}, true},
		{"/opt/b/mcpepoch-core", []string{"/opt/b/mcpepoch", "dev"}, true},
		{"/opt/b/mcpepoch-core", []string{"/opt/b/mcpepoch-core", "host", "--", "node"}, true},
		{"/opt/b/mcpepoch-core", []string{"mcpepoch-core", "status"}, false},
		{"/usr/bin/node", []string{"node", "host"}, false},
		{"/opt/a/mcpepoch-core", []string{"x"}, false},
	} {
		if got := isHostProcess(c.exe, c.argv, me); got != c.want {
			t.Errorf("isHostProcess(%q, %q) = %v, want %v", c.exe, c.argv, got, c.want)
		}
	}
}
