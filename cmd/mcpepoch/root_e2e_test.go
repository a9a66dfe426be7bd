package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestRootFoundFromSubdirectory: status and restart run in a subdirectory
// of the project find the project root above it, as git does, and reach
// the real host serving it; from a directory outside any project they
// exit 3 and name the directory they looked in.
func TestRootFoundFromSubdirectory(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.record()
	toolNames(t, p.host())

	sub := p.path("src")
	out, code := testenv.Run(t, sub, nil, p.bin, "status", "--json")
	if code != 0 {
		t.Fatalf("status --json in %s: exit %d\n%s", sub, code, out)
	}
	var all []hostStatus
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil || len(all) != 1 {
		t.Fatalf("status --json in %s: %v, %d hosts, want 1\n%s", sub, err, len(all), out)
	}
	out, code = testenv.Run(t, sub, nil, p.bin, "restart")
	if code != 0 || !strings.Contains(out.Stdout, "server restarted: epoch ") {
		t.Fatalf("restart in %s: exit %d, want 0 and a restart\n%s", sub, code, out)
	}

	outside := t.TempDir()
	out, code = testenv.Run(t, outside, nil, p.bin, "status")
	if code != exitNoHost {
		t.Errorf("status outside the project: exit %d, want %d\n%s", code, exitNoHost, out)
	}
	if !strings.Contains(out.Stderr, "no host listening for the project at ") || strings.Contains(out.Stderr, p.dir) {
		t.Errorf("status outside the project does not name where it looked:\n%s", out)
	}
}
