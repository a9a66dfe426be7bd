package host

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestLineQueueNeverBlocks: pushing never blocks on a peer that does not read;
// lines are written in order; the first write error is reported once and
// later lines are dropped. Without the queue, the host wrote to the client
// under a lock that status, restarts and approvals need.
func TestLineQueueNeverBlocks(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	q := newLineQueue(w, nil)
	pushed := make(chan struct{})
	go func() {
		for i := range 1000 {
			q.push([]byte{byte('a' + i%26), '\n'})
		}
		close(pushed)
	}()
	select {
	case <-pushed:
	case <-time.After(10 * time.Second):
		t.Fatal("push blocked on a writer that does not return")
	}
	if q.close(50 * time.Millisecond) {
		t.Error("close reported the lines written while the writer blocks")
	}
	close(w.release)
	select {
	case <-q.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the queue did not finish once the writer returned")
	}
	w.mu.Lock()
	got := w.buf.String()
	w.mu.Unlock()
	if len(got) != 2000 {
		t.Fatalf("wrote %d bytes, want 2000", len(got))
	}
	for i := range 1000 {
		if got[2*i] != byte('a'+i%26) {
			t.Fatalf("line %d is %q: out of order", i, got[2*i:2*i+2])
		}
	}

	// A failing writer: onErr once, later lines dropped, close returns.
	pr, pw := io.Pipe()
	pr.Close()
	var mu sync.Mutex
	var errs []error
	q = newLineQueue(pw, func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	})
	for range 10 {
		q.push([]byte("x\n"))
	}
	if !q.close(10 * time.Second) {
		t.Fatal("close did not return after a write error")
	}
	q.push([]byte("late\n"))
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], io.ErrClosedPipe) {
		t.Errorf("onErr called with %v, want once with io.ErrClosedPipe", errs)
	}
}

// TestBatchQueue: take returns everything queued, in order; after close
// it still returns what was queued, then nil and closed at once; drop
// discards; nothing is queued after either.
func TestBatchQueue(t *testing.T) {
	q := newBatchQueue[int]()
	q.push(1)
	q.push(2)
	if got, closed := q.take(); len(got) != 2 || got[0] != 1 || got[1] != 2 || closed {
		t.Fatalf("take = %v, %v; want [1 2], false", got, closed)
	}
	q.push(3)
	q.close()
	if q.push(4) {
		t.Error("push after close: queued")
	}
	if got, closed := q.take(); len(got) != 1 || got[0] != 3 || !closed {
		t.Fatalf("take after close = %v, %v; want [3], true", got, closed)
	}
	if got, closed := q.take(); got != nil || !closed {
		t.Fatalf("take when closed and empty = %v, %v; want nil, true", got, closed)
	}
	d := newBatchQueue[int]()
	d.push(1)
	d.drop()
	if got, closed := d.take(); got != nil || !closed {
		t.Fatalf("take after drop = %v, %v; want nil, true", got, closed)
	}
}

// TestBatchQueueTakeTimeout: takeTimeout returns nothing once its timeout
// passes with nothing queued, returns early with what a push queues while
// it waits, and returns at once on close or with a timeout of zero. The
// audit writer relies on it to retry on time while the log cannot be
// written, without a second mutex and condition of its own.
func TestBatchQueueTakeTimeout(t *testing.T) {
	q := newBatchQueue[int]()
	start := time.Now()
	if got, closed := q.takeTimeout(20 * time.Millisecond); got != nil || closed {
		t.Fatalf("takeTimeout on an empty queue = %v, %v; want nil, false", got, closed)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("takeTimeout returned after %v, before its timeout", waited)
	}
	if got, _ := q.takeTimeout(0); got != nil {
		t.Fatalf("takeTimeout(0) on an empty queue = %v", got)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		q.push(7)
	}()
	// A timeout no test machine reaches: only the push can end the wait.
	if got, closed := q.takeTimeout(time.Hour); len(got) != 1 || got[0] != 7 || closed {
		t.Fatalf("takeTimeout while a push comes = %v, %v; want [7], false", got, closed)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		q.close()
	}()
	if got, closed := q.takeTimeout(time.Hour); got != nil || !closed {
		t.Fatalf("takeTimeout while the queue closes = %v, %v; want nil, true", got, closed)
	}
}
