package host_test

import (
	"os/exec"

	"github.com/mcpepoch/mcpepoch/internal/testenv"

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

// A head file that is a FIFO (audit.head for the host, builds.head for a
// build hook no host heard) is refused at once, naming it, as a log that is
// not a regular file is: mcpepoch record ends and names the file, and the
// host ends at start with an error naming it, its client still connected,
// instead of hanging in open(2) before answering initialize.
func TestAuditHeadFIFO(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	if err := os.MkdirAll(p.path(".mcpepoch"), 0o700); err != nil {
		t.Fatal(err)
	}
	builds := p.path(".mcpepoch/builds.head")
	if err := syscall.Mkfifo(builds, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := testenv.Run(t, p.dir, nil, mcpepoch(t), "record", "--dir", p.dir)
	if !strings.Contains(out.Combined, builds) {
		t.Errorf("mcpepoch record with a FIFO at %s:\n%s\nwant the file named", builds, out)
	}
	head := p.path(".mcpepoch/audit.head")
	if err := syscall.Mkfifo(head, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpepoch(t), p.hostArgs(nil)...)
	cmd.Dir, cmd.Env = p.dir, testenv.Environ()
	stdin, err := cmd.StdinPipe() // kept open: the host must end on its own
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(stderr.String(), head) || !strings.Contains(stderr.String(), "named pipe") {
			t.Errorf("host with a FIFO at %s: %v\n%s\nwant an error naming it as a named pipe", head, err, stderr.String())
		}
	case <-time.After(waitLong):
		cmd.Process.Kill()
		<-done
		t.Fatalf("host with a FIFO at %s still running after %v:\n%s", head, waitLong, stderr.String())
	}
}
