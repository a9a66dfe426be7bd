package host_test

import (
	"syscall"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// A call in flight when its server exits, or when the host is stopped,
// gets server_restarted saying what happened and what to do next: check
// whether it took effect, with the command that shows why the server
// exited, or reconnect from the client.
func TestInFlightEndsNameNextStep(t *testing.T) {
	t.Parallel()
	t.Run("server_exited", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, nil)
		p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
		c := startRaw(t, p, nil)
		c.initialize()
		id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 60000})
		waitFile(t, p.path("counter/k.started"), "pid=")
		if err := syscall.Kill(p.status().Execution.ProcessID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r := c.response(id, waitLong)
		wantError(t, r, host.CodeServerRestarted, "server_restarted (server_exited):")
		wantNext(t, r, "check whether it did before calling again", "mcpepoch status shows why the server exited")
	})
	t.Run("host_stopped", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, nil)
		p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
		c := startRaw(t, p, nil)
		c.initialize()
		id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 60000})
		waitFile(t, p.path("counter/k.started"), "pid=")
		c.cmd.Process.Signal(syscall.SIGTERM)
		r := c.response(id, waitLong)
		wantError(t, r, host.CodeServerRestarted, "server_restarted (host_stopped):")
		wantNext(t, r, "reconnect the server from the client")
	})
}
