package host_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// A status request reads the manifest and /proc without the lock every
// client message takes: with the manifest replaced by a FIFO that nobody
// writes, the status request waits, and the client's tools/call is still
// answered. When status read the manifest under that lock, the call
// waited as long as the FIFO stayed silent.
func TestStatusReadsDiskOutsideClientLock(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")

	fifo := layout.Manifest(p.dir)
	if err := os.MkdirAll(filepath.Dir(fifo), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	status := p.background("status", "--dir", p.dir, "--json")
	t.Cleanup(func() {
		// A writer that opens and closes the FIFO lets the host's read end.
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
		<-status.done
	})
	// The status request is in flight once its command has had time to
	// connect; it cannot finish while the FIFO stays silent.
	time.Sleep(300 * time.Millisecond)
	select {
	case <-status.done:
		t.Fatalf("mcpepoch status returned while the manifest was a silent FIFO:\n%s", status.out.String())
	default:
	}
	wantText(t, c.response(c.call("version", nil), 5*time.Second), "revision=A")
}
