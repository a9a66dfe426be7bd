package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostInterruptIsNormalStop: Ctrl-C in a client's terminal sends SIGINT
// to the host as well; the host stops its server and exits 0, saying it was
// interrupted, with no error line.
func TestHostInterruptIsNormalStop(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	h := startRawHost(t, p, "node", "dist/server.js")
	h.handshake()
	pgid := p.onlyHost().Execution.ProcessID
	seenGone := killGroupOnCleanup(t, pgid)
	h.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-h.done:
	case <-time.After(stopBound):
		t.Fatalf("host still running %s after SIGINT", stopBound)
	}
	stderr := h.stderr.String()
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("host exit status %d after SIGINT, want 0\n%s", code, stderr)
	}
	if strings.Contains(stderr, "error:") || !strings.Contains(stderr, "mcpepoch host: interrupted: server stopped\n") {
		t.Errorf("host stderr after SIGINT, want a plain stop and no error:\n%s", stderr)
	}
	waitGroupGone(t, pgid, "SIGINT")
	seenGone()
}
