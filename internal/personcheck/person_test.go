package personcheck

import "testing"

// TestIsHostProcess: a host is recognised by its command (host or dev)
// run by this executable, or by a binary named mcpepoch (another
// install's).
func TestIsHostProcess(t *testing.T) {
	t.Parallel()
	me := "/opt/a/mcpepoch"
	for _, c := range []struct {
		exe  string
		argv []string
		want bool
	}{
		{"/opt/a/mcpepoch", []string{"/opt/a/mcpepoch", "host"}, true},
		{"/opt/a/mcpepoch", []string{"/bin/renamed", "host"}, true},
		{"/opt/b/mcpepoch", []string{"/opt/b/mcpepoch", "dev"}, true},
		{"/opt/b/mcpepoch", []string{"mcpepoch", "host", "--", "node"}, true},
		{"/opt/b/mcpepoch", []string{"mcpepoch", "status"}, false},
		{"/usr/bin/node", []string{"node", "host"}, false},
		{"/opt/a/mcpepoch", []string{"x"}, false},
	} {
		if got := isHostProcess(c.exe, c.argv, me); got != c.want {
			t.Errorf("isHostProcess(%q, %q) = %v, want %v", c.exe, c.argv, got, c.want)
		}
	}
}
