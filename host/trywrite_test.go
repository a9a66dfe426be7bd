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
// descriptor is non-blocking (the server's stdin, whose mode the queue
// reads once: own) or blocking (the host's stdout as a client opens it),
// and keeps the order of every line; so also when a shared descriptor
// turns blocking after the queue was made (whoever shares it may).
func TestLineQueueOnPipeNeverBlocks(t *testing.T) {
	for _, mode := range []string{"non-blocking", "blocking", "own", "turned-blocking"} {
		t.Run(mode, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if mode == "blocking" {
				w.Fd() // makes the descriptor blocking, as os.Stdout is
			}
			q := newLineQueue(w, nil)
			if mode == "own" {
				q = newOwnPipeQueue(w, nil)
			}
			if mode == "turned-blocking" {
				w.Fd()
			}
			if q.try == nil {
				t.Fatal("no direct write for a pipe")
			}
			// The first line finds the pipe empty: it is written by push
			// itself, not left to the writer goroutine.
			first := []byte("first\n")
			q.push(first)
			q.q.mu.Lock()
			queued := len(q.q.items)
			q.q.mu.Unlock()
			if queued != 0 {
				t.Fatalf("a small line on an empty pipe was queued, not written at once")
			}
			var want bytes.Buffer
			want.Write(first)
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

// Lines staged on a line queue are written by the next flush or push, of
// any goroutine, before the pushed line and in the order staged; nothing
// staged is written before that, and a staged line whose gate is not
// open yet holds back the lines after it until it opens.
func TestLineQueueStagedLines(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			if blocking {
				w.Fd()
			}
			q := newLineQueue(w, nil)
			read := func(want string) {
				t.Helper()
				got := make([]byte, 0, len(want))
				r.SetReadDeadline(time.Now().Add(20 * time.Second))
				for len(got) < len(want) {
					b := make([]byte, len(want)-len(got))
					n, err := r.Read(b)
					if err != nil {
						t.Fatalf("read %q, want %q: %v", got, want, err)
					}
					got = append(got, b[:n]...)
				}
				if string(got) != want {
					t.Fatalf("read %q, want %q", got, want)
				}
			}
			nothing := func(why string) {
				t.Helper()
				r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if n, _ := r.Read(make([]byte, 64)); n > 0 {
					t.Fatal(why)
				}
			}
			q.stage([]byte("a\n"))
			q.stage([]byte("b\n"))
			nothing("a staged line was written before a flush")
			q.flush()
			read("a\nb\n")

			open := make(chan bool, 1)
			q.stage([]byte("c\n"))
			q.stageGated([]byte("d\n"), func() bool { return <-open }, func() bool { return false }, nil)
			q.stage([]byte("e\n"))
			nothing("a staged line was written before a flush")
			done := make(chan struct{})
			go func() { q.push([]byte("f\n")); close(done) }()
			<-done
			read("c\n")
			nothing("a line after a closed gate was written before it opened")
			open <- true
			read("d\ne\nf\n")

			q.stageGated([]byte("g\n"), func() bool { return true }, func() bool { return true }, nil)
			q.push([]byte("h\n"))
			read("g\nh\n")
			if !q.close(10 * time.Second) {
				t.Fatal("the queue did not drain")
			}
		})
	}
}
