package host

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// A line queue on a real pipe writes small lines at once while the pipe
// has room, yet never blocks on a reader that stops reading, whether the
// descriptor is non-blocking (the server's stdin) or blocking (the host's
// stdout as a client opens it), and keeps the order of every line.
func TestLineQueueOnPipeNeverBlocks(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if blocking {
				w.Fd() // makes the descriptor blocking, as os.Stdout is
			}
			q := newLineQueue(w, nil)
			if q.try == nil {
				t.Fatal("no direct write for a pipe")
			}
			var want bytes.Buffer
			pushed := make(chan struct{})
			go func() {
				// 4 MiB, far more than the pipe holds, in lines of
				// 1 KiB and a few larger than PIPE_BUF; small lines
				// first, so that the pipe fills by direct writes.
				for i := range 4000 {
					n := 1000
					if i%500 == 499 {
						n = 9000
					}
					line := fmt.Appendf(nil, "%05d %s\n", i, bytes.Repeat([]byte{'x'}, n))
					want.Write(line)
					q.push(line)
				}
				close(pushed)
			}()
			select {
			case <-pushed:
			case <-time.After(20 * time.Second):
				t.Fatal("push blocked on a pipe nobody reads")
			}
			got := make(chan []byte)
			go func() { b, _ := io.ReadAll(r); got <- b }()
			if !q.close(20 * time.Second) {
				t.Fatal("the queued lines were not written once the pipe was read")
			}
			w.Close()
			if b := <-got; !bytes.Equal(b, want.Bytes()) {
				t.Fatalf("read %d bytes, want %d, or out of order", len(b), want.Len())
			}
		})
	}
}
