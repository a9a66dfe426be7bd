package host

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/pipes"
)

// logSinkMax is how many bytes of log lines and server stderr the host
// holds for its own stderr while that is not read; beyond it lines are
// dropped and counted.
const logSinkMax = 1 << 20

// logSink is the host's stderr: its own log lines and the server's stderr
// it passes through. Writes never block the host (many clients pipe
// stderr and read it now and then, or never): they go into one bounded
// buffer that one goroutine writes out. What does not fit is dropped,
// counted, and said once, as a line of its own, when writing works again.
type logSink struct {
	w   io.Writer
	max int

	mu      sync.Mutex
	cond    *sync.Cond
	items   [][]byte
	size    int  // bytes in items
	busy    bool // the writer goroutine holds a batch
	closed  bool
	dropped int // lines dropped since the last notice
	done    chan struct{}
	// try writes at once when that cannot block (a pipe with room),
	// returning what it could not write; nil for a writer that is not a
	// pipe (pipes.TryWriter). A writer that is no *os.File is memory
	// (a test's buffer) and is written inline when nothing is queued.
	try func(p []byte) (rest []byte, done bool)
}

// newLogSink starts the writer goroutine for w, holding at most max bytes.
func newLogSink(w io.Writer, max int) *logSink {
	s := &logSink{w: w, max: max, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	if f, ok := w.(*os.File); ok {
		s.try = pipes.TryWriter(f)
	} else {
		s.try = func(p []byte) ([]byte, bool) {
			w.Write(p)
			return nil, true
		}
	}
	go s.loop()
	return s
}

// Write queues a copy of p (one or more whole lines, or a chunk of a
// long one) and never blocks. It always reports len(p), nil: a line that
// did not fit is counted, not an error of the caller's.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return len(p), nil
	}
	if !s.busy && len(s.items) == 0 && s.dropped == 0 && s.try != nil {
		rest, done := s.try(p)
		if done {
			return len(p), nil
		}
		p = rest
	}
	if s.size+len(p) > s.max {
		s.dropped++
		return len(p), nil
	}
	s.items = append(s.items, append([]byte(nil), p...))
	s.size += len(p)
	s.cond.Signal()
	return len(p), nil
}

// loop writes what is queued, in order, until the sink is closed and
// empty. After a write error (stderr closed) it keeps taking lines and
// discards them: there is nowhere left to say anything.
func (s *logSink) loop() {
	defer close(s.done)
	broken := false
	for {
		s.mu.Lock()
		for len(s.items) == 0 && s.dropped == 0 && !s.closed {
			s.cond.Wait()
		}
		batch, dropped := s.items, s.dropped
		if len(batch) == 0 && dropped == 0 {
			s.mu.Unlock()
			return // closed and empty
		}
		s.items, s.size, s.dropped, s.busy = nil, 0, 0, true
		s.mu.Unlock()
		if dropped > 0 && !broken {
			_, err := fmt.Fprintf(s.w, "mcpepoch host: %s dropped %d lines of the host's log and the server's stderr: stderr was not read\n", time.Now().Format(logTime), dropped)
			broken = err != nil
		}
		for _, p := range batch {
			if !broken {
				_, err := s.w.Write(p)
				broken = err != nil
			}
		}
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
	}
}

// close stops taking lines and waits at most d for what is queued to be
// written: a stderr nobody reads never keeps the host from exiting.
func (s *logSink) close(d time.Duration) {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-time.After(d):
	}
}

// passStderr copies the server's stderr r into sink, a line at a time
// (or 64 KiB of a longer one), until r ends or is closed, and keeps its
// last lines in tail.
func passStderr(r io.Reader, sink io.Writer, tail *stderrTail) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			tail.Write(chunk)
			sink.Write(chunk)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// logDrain bounds how long the host, as it ends, waits for its stderr to
// take the lines still queued.
const logDrain = 500 * time.Millisecond
