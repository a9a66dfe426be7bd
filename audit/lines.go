package audit

import (
	"bytes"
	"io"
)

// readBuf is the size of the reads eachLine makes; a longer line grows
// its buffer.
const readBuf = 1 << 20

// rawLine is one line of a log.
type rawLine struct {
	n          int    // 1-based
	off        int64  // byte offset of its start
	b          []byte // without the newline; valid only during the call
	terminated bool   // ended with "\n"
}

// eachLine calls fn for every line of r, the last one even if it lacks a
// newline, reading r in blocks of readBuf bytes. fn must not keep l.b.
// A read error ends it (after fn has seen what was read, a line cut short
// by the error included).
func eachLine(r io.Reader, fn func(l rawLine)) error {
	buf := make([]byte, readBuf)
	start, end := 0, 0 // buf[start:end] is read and not yet given to fn
	var off int64
	n := 0
	for {
		switch {
		case start == end:
			start, end = 0, 0
		case len(buf)-end < readBuf/4 && start > 0:
			end = copy(buf, buf[start:end])
			start = 0
		case end == len(buf): // a line longer than the buffer
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := r.Read(buf[end:])
		end += m
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			n++
			fn(rawLine{n: n, off: off, b: buf[start : start+i], terminated: true})
			off += int64(i) + 1
			start += i + 1
		}
		if err != nil {
			if start < end {
				fn(rawLine{n: n + 1, off: off, b: buf[start:end]})
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
