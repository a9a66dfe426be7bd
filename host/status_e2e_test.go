package host_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// A manifest replaced by a FIFO that nobody writes freezes neither status
// nor the client: status reads the manifest without blocking (a FIFO is
// not a regular file) and outside the lock every client message takes,
// and a tools/call sent while the status request runs is answered. When
// status read the manifest with a blocking read under that lock, the
// call waited as long as the FIFO stayed silent.
func TestFIFOManifestFreezesNothing(t *testing.T) {
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
		select {
		case <-status.done:
		case <-time.After(waitLong):
			t.Errorf("mcpepoch status still reads the FIFO manifest %s after a writer closed it", waitLong)
		}
	})
	wantText(t, c.response(c.call("version", nil), 5*time.Second), "revision=A")
	select {
	case <-status.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("mcpepoch status still waits 10 s after the manifest became a FIFO")
	}
	if st := p.status(); st.Execution == nil {
		t.Errorf("status with a FIFO manifest: no execution record: %+v", st)
	}
}
