package host_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO planted at .mcpepoch/audit.lost (the count of lost records) is
// refused at once, naming the file: calls stop with audit_unavailable
// instead of the writer blocking on it under the log's lock, the build
// hook still gets through, and the host exits when its client closes
// (startRaw's cleanup). Once the file is moved aside, calls run again.
func TestAuditLostFIFO(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	if err := os.MkdirAll(p.path(".mcpepoch"), 0o700); err != nil {
		t.Fatal(err)
	}
	lost := p.path(".mcpepoch/audit.lost")
	if err := syscall.Mkfifo(lost, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startRaw(t, p, nil)
	c.initialize()
	r := c.callWait("version", nil)
	wantError(t, r, -31020, "audit_unavailable")
	if !strings.Contains(string(r.Error.Data), lost) || !strings.Contains(string(r.Error.Data), "named pipe") {
		t.Errorf("error data %s: want %s named as a named pipe", r.Error.Data, lost)
	}
	p.record()
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLong)
	for {
		r := c.callWait("version", nil)
		if r.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still refused %v after %s was removed: %v", waitLong, lost, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
