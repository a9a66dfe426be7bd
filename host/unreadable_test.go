package host_test

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A manifest replaced by a FIFO neither hangs mcpepoch status nor stalls
// the host's client traffic: the host does not wait on it.
func TestStatusWithFIFOManifest(t *testing.T) {
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	p.record()
	m := p.path(".mcpepoch/manifest.toml")
	if err := os.Remove(m); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(m, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status := exec.CommandContext(ctx, mcpepoch(t), "status", "--dir", p.dir)
	status.Dir, status.Env = p.dir, p.command("true").Env
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = status.CombinedOutput()
		done <- err
	}()
	wantText(t, c.callWait("version", nil), "revision=A")
	select {
	case err := <-done:
		if ctx.Err() != nil {
			t.Fatal("mcpepoch status was killed after 20s with a FIFO manifest")
		}
		if err != nil {
			t.Fatalf("mcpepoch status: %v\n%s", err, out)
		}
	case <-ctx.Done():
		t.Fatal("mcpepoch status still running after 20s with a FIFO manifest")
	}
	t.Logf("mcpepoch status:\n%s", out)
	wantText(t, c.callWait("version", nil), "revision=A")
}
