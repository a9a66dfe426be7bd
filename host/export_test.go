package host

import (
	"encoding/json"
	"io"
	"time"
)

func newCatalog(tools []json.RawMessage) (*Catalog, error) {
	return newCatalogAfter(nil, tools)
}

// readLines is readLinesMore for an fn that does not ask for more.
func readLines(r io.Reader, max int, fn func(line []byte, over *overflow)) {
	readLinesMore(r, max, func(line []byte, over *overflow, _ bool) { fn(line, over) })
}

// push queues v and reports whether it was queued: after close it is
// dropped.
func (q *batchQueue[T]) push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, v)
	q.cond.Signal()
	return true
}

// takeTimeout is take that waits at most d: it returns everything queued
// as soon as something is, the queue is closed, or d has passed (then
// possibly nothing). A d of zero or less does not wait.
func (q *batchQueue[T]) takeTimeout(d time.Duration) ([]T, bool) {
	expired := d <= 0
	if !expired {
		t := time.AfterFunc(d, func() {
			q.mu.Lock()
			expired = true
			q.cond.Broadcast()
			q.mu.Unlock()
		})
		defer t.Stop()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed && !expired {
		q.cond.Wait()
	}
	batch := q.items
	q.items = nil
	return batch, q.closed
}

// newLineQueue starts the writer goroutine for w.
func newLineQueue(w io.Writer, onErr func(error)) *lineQueue {
	return startLineQueue(w, onErr, false)
}

// flush waits until every event queued before it was handed to the log
// and, when written, synced.
func (a *auditor) flush() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	target := a.queued
	for (a.done < target || a.synced < target && a.err == nil) && !a.closed {
		a.urgent = a.urgent || a.done < target
		a.wake()
		nudge(a.hurry)
		a.cond.Wait()
	}
}
