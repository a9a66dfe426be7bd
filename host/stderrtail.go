package host

import (
	"bytes"
	"sync"
	"time"
	"unicode/utf8"
)

// The last lines a server wrote to its stderr, kept so that a start that
// failed can say why where the developer looks: a build's answer (record,
// mcpepoch dev, mcpepoch restart) carries them. The whole stderr still
// goes to the host's own stderr, which only the MCP client's log shows.

const (
	// tailLines is how many of the last stderr lines a child keeps.
	tailLines = 12
	// tailLineMax is how many bytes of each line are kept; the rest is
	// cut off and marked "…".
	tailLineMax = 240
	// tailDrain bounds how long an answer waits for the stderr of a
	// server that has exited to be read to its end.
	tailDrain = 300 * time.Millisecond
)

// stderrTail is a ring of the last tailLines lines of a server's stderr.
type stderrTail struct {
	mu      sync.Mutex
	lines   []string
	partial []byte // the start of a line with no newline yet (at most tailLineMax bytes)
	long    bool   // partial was cut
}

// Write takes a chunk of stderr: whole lines, or a piece of one.
func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := tailLineMax - len(t.partial); len(chunk) > room {
			for room > 0 && !utf8.RuneStart(chunk[room]) {
				room-- // not into the middle of a rune
			}
			if !t.long {
				t.partial = append(t.partial, chunk[:room]...)
			}
			t.long = true
		} else if !t.long {
			t.partial = append(t.partial, chunk...)
		}
		if i < 0 {
			break
		}
		t.endLineLocked()
		p = p[i+1:]
	}
	return n, nil
}

// endLineLocked moves the partial line into the ring.
func (t *stderrTail) endLineLocked() {
	l := string(bytes.TrimRight(t.partial, "\r"))
	if t.long {
		l += "…"
	}
	t.partial, t.long = t.partial[:0], false
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, l)
}

// Lines returns the kept lines, oldest first, with an unfinished last
// line; nil when the server wrote nothing.
func (t *stderrTail) Lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > tailLines {
			out = out[1:]
		}
	}
	return out
}

// startError is a start of a new server that failed (it exited, or did
// not answer initialize or tools/list): the cause, and the child whose
// stderr says why.
type startError struct {
	err error
	c   *child
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// stderr returns the last lines of the failed server's stderr, once the
// host has read it to its end (for up to tailDrain).
func (e *startError) stderr() []string {
	select {
	case <-e.c.errDone:
	case <-time.After(tailDrain):
	}
	return e.c.tail.Lines()
}
