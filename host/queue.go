package host

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/pipes"
)

// batchQueue is an unbounded FIFO from goroutines that must never block
// (they may hold h.mu) to one consumer goroutine that takes everything
// queued at once, so that it can write a batch in one go. Memory grows
// with what the consumer has not taken.
type batchQueue[T any] struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []T
	closed bool
	active bool // the consumer holds a batch it has not finished (take, idle)
}

func newBatchQueue[T any]() *batchQueue[T] {
	q := &batchQueue[T]{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take waits until something is queued or the queue is closed, and
// returns everything queued and whether the queue is closed. Once closed
// and empty it returns nil, true at once. The consumer holds the batch
// until it calls idle.
func (q *batchQueue[T]) take() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	batch := q.items
	q.items = nil
	q.active = len(batch) > 0
	return batch, q.closed
}

// idle says the consumer has finished the batch take returned.
func (q *batchQueue[T]) idle() {
	q.mu.Lock()
	q.active = false
	q.mu.Unlock()
}

// close stops accepting items; what is queued can still be taken.
func (q *batchQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// drop closes the queue and discards what is queued.
func (q *batchQueue[T]) drop() {
	q.mu.Lock()
	q.closed, q.items = true, nil
	q.cond.Broadcast()
	q.mu.Unlock()
}

// lineQueue writes lines to w in order from one goroutine, so that callers,
// which may hold the host's lock, never block on a peer that stops reading
// (a full pipe).
type lineQueue struct {
	w     io.Writer
	onErr func(error) // called once, from the writer goroutine, on the first failed write
	q     *batchQueue[outLine]
	done  chan struct{}
	// try writes lines at once when that cannot block (a pipe with room),
	// in one writev(2), returning how many bytes it wrote; nil when w
	// allows no such write (pipes.TryWriterV).
	try func(bufs [][]byte) int
	// staged holds the lines stage queued, under q.mu: the next flush,
	// push or pushGated writes them first.
	staged []outLine
	iov    [][]byte // reused by flushLocked
}

// outLine is one line of a lineQueue. A line with a gate is written only
// once gate, called by the writer goroutine, returns true; when it returns
// false the line is dropped and refused is called instead. ready, when
// set, tells without waiting whether gate would return true now (written),
// so that the line can be written at once.
type outLine struct {
	b       []byte
	gate    func() bool
	ready   func() bool
	refused func()
}

// newOwnPipeQueue is newLineQueue for the write end of a pipe the host
// made and alone holds (the server's stdin): its mode is read once
// (pipes.TryWriterV).
func newOwnPipeQueue(f *os.File, onErr func(error)) *lineQueue {
	return startLineQueue(f, onErr, true)
}

func startLineQueue(w io.Writer, onErr func(error), own bool) *lineQueue {
	l := &lineQueue{w: w, onErr: onErr, q: newBatchQueue[outLine](), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		l.try = pipes.TryWriterV(f, own)
	}
	go l.loop()
	return l
}

// push queues line (newline included). When nothing is queued and the
// peer's pipe has room, the line is written at once by the caller, with
// no hand-off to the writer goroutine (a small call's answer then costs
// no wake-up); push still never blocks. After close or a write error the
// line is dropped.
func (l *lineQueue) push(line []byte) { l.put(outLine{b: line}) }

// pushGated queues line to be written once gate returns true (see
// outLine); lines queued after it wait for it.
func (l *lineQueue) pushGated(line []byte, gate, ready func() bool, refused func()) {
	l.put(outLine{b: line, gate: gate, ready: ready, refused: refused})
}

// stage queues line (newline included) for the next flush, push or
// pushGated, of any goroutine, to write with the lines staged before it,
// in one write: a goroutine that read a burst of messages stages what
// each one sends and flushes once, after the last. Nothing is written and
// no goroutine woken until then.
func (l *lineQueue) stage(line []byte) { l.stageLine(outLine{b: line}) }

// stageGated is stage for a line with a gate (see outLine).
func (l *lineQueue) stageGated(line []byte, gate, ready func() bool, refused func()) {
	l.stageLine(outLine{b: line, gate: gate, ready: ready, refused: refused})
}

func (l *lineQueue) stageLine(o outLine) {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	if !l.q.closed {
		l.staged = append(l.staged, o)
	}
}

// flush writes what was staged, as push would.
func (l *lineQueue) flush() {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	l.flushLocked()
}

// put stages o and flushes.
func (l *lineQueue) put(o outLine) {
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	if l.q.closed {
		return
	}
	l.staged = append(l.staged, o)
	l.flushLocked()
}

// flushLocked writes the staged lines at once, as far as the pipe takes
// them, when nothing is queued before them and each one's gate is open
// already; what remains goes to the writer goroutine, in order. q.mu is
// held.
func (l *lineQueue) flushLocked() {
	q, all := l.q, l.staged
	if len(all) == 0 {
		return
	}
	defer func() {
		clear(all) // the lines are written or queued: not kept here
		l.staged = all[:0]
	}()
	if q.closed {
		return
	}
	staged, k := all, 0 // staged[:k] can be written now
	if l.try != nil && !q.active && len(q.items) == 0 {
		for k < len(staged) && k < pipes.MaxIovecs && (staged[k].gate == nil || staged[k].ready != nil && staged[k].ready()) {
			k++
		}
	}
	if k > 0 {
		iov := l.iov[:0]
		for _, o := range staged[:k] {
			iov = append(iov, o.b)
		}
		n := l.try(iov)
		clear(iov)
		l.iov = iov[:0]
		for k > 0 && n >= len(staged[0].b) {
			n -= len(staged[0].b)
			staged, k = staged[1:], k-1
		}
		if k > 0 {
			staged[0] = outLine{b: staged[0].b[n:]} // its gate was open
		}
	}
	if len(staged) > 0 {
		q.items = append(q.items, staged...)
		q.cond.Signal()
	}
}

func (l *lineQueue) loop() {
	defer close(l.done)
	for {
		batch, closed := l.q.take()
		for _, o := range batch {
			if o.gate != nil && !o.gate() {
				if o.refused != nil {
					o.refused()
				}
				continue
			}
			if _, err := l.w.Write(o.b); err != nil {
				l.q.drop()
				if l.onErr != nil {
					l.onErr(err)
				}
				return
			}
		}
		l.q.idle()
		if closed && len(batch) == 0 {
			return
		}
	}
}

// close stops accepting lines and waits up to timeout for the queued ones
// to be written; it reports whether they were.
func (l *lineQueue) close(timeout time.Duration) bool {
	l.q.close()
	select {
	case <-l.done:
		return true
	case <-time.After(timeout):
		return false
	}
}
