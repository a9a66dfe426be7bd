package host

import (
	"io"
	"sync"
	"time"
)

// lineQueue writes lines to w in order from one goroutine, so that callers,
// which may hold the host's lock, never block on a peer that stops reading
// (a full pipe). Memory grows with what the peer leaves unread.
type lineQueue struct {
	w     io.Writer
	onErr func(error) // called once, from the writer goroutine, on the first failed write

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte
	closed bool
	done   chan struct{}
}

// newLineQueue starts the writer goroutine for w.
func newLineQueue(w io.Writer, onErr func(error)) *lineQueue {
	q := &lineQueue{w: w, onErr: onErr, done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.loop()
	return q
}

// push queues line (newline included). After close or a write error it is
// dropped.
func (q *lineQueue) push(line []byte) {
	q.mu.Lock()
	if !q.closed {
		q.queue = append(q.queue, line)
		q.cond.Signal()
	}
	q.mu.Unlock()
}

func (q *lineQueue) loop() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.queue) == 0 && !q.closed {
			q.cond.Wait()
		}
		batch := q.queue
		q.queue = nil
		closed := q.closed
		q.mu.Unlock()
		for _, line := range batch {
			if _, err := q.w.Write(line); err != nil {
				q.mu.Lock()
				q.closed, q.queue = true, nil
				q.mu.Unlock()
				if q.onErr != nil {
					q.onErr(err)
				}
				return
			}
		}
		if closed && len(batch) == 0 {
			return
		}
	}
}

// close stops accepting lines and waits up to timeout for the queued ones
// to be written; it reports whether they were.
func (q *lineQueue) close(timeout time.Duration) bool {
	q.mu.Lock()
	q.closed = true
	q.cond.Signal()
	q.mu.Unlock()
	select {
	case <-q.done:
		return true
	case <-time.After(timeout):
		return false
	}
}
