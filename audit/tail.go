package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// tail is what scanTail found at the end of a log.
type tail struct {
	last      Head   // the last complete record; {0, GenesisPrev} if none
	lastPrev  string // its prev
	lastStart int64  // the offset of its line
	endsNL    bool   // the file is empty or ends with "\n"
	torn      []TornLine
}

// scanTail reads the log backwards from size to its last complete record,
// collecting the lines after it that are not records.
func scanTail(f *os.File, size int64) (tail, error) {
	t := tail{last: Head{Hash: GenesisPrev}, endsNL: true}
	if size == 0 {
		return t, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err != nil {
		return t, fmt.Errorf("audit: read %s: %w", f.Name(), err)
	}
	t.endsNL = b[0] == '\n'
	end := size
	if t.endsNL {
		end--
	}
	for {
		start, line, err := lineBefore(f, end)
		if err != nil {
			return t, err
		}
		rec, sum, perr := parseLine(line)
		if perr == nil {
			if sum != rec.Hash {
				return t, &CorruptError{Path: f.Name(), Offset: start,
					Reason: fmt.Sprintf("record seq %d does not match its hash (edited)", rec.Seq)}
			}
			t.last = Head{Seq: rec.Seq, Hash: rec.Hash}
			t.lastPrev = rec.Prev
			t.lastStart = start
			break
		}
		t.torn = append([]TornLine{{Offset: start, Bytes: end - start, Digest: digestOf(line)}}, t.torn...)
		if len(t.torn) > maxTornLines {
			return t, &CorruptError{Path: f.Name(), Offset: start,
				Reason: fmt.Sprintf("more than %d lines at the end are not records", maxTornLines)}
		}
		if start == 0 {
			break
		}
		end = start - 1
	}
	return t, nil
}

// maxHeadLag is how many records the head file may lag the log after a
// writer stopped between a batch and its head rewrite: a batch, and the
// records_lost and log_recovered records that may precede it. The copy of
// the head, synced with every group, lags no further.
const maxHeadLag = MaxBatch + 2

// maxLazyLag is how many records the head file may lag the log when a
// machine stopped before the last rewrites of a lazy head reached the
// disk (Options.LazyHead, HeadSyncEvery: a second of a host's records,
// which at tens of thousands of records a second is far past a batch).
// Past it, or when the records do not chain back to the head, Open
// refuses the log (HeadMismatchError).
const maxLazyLag = 1 << 20

// chainReaches reports whether the records before the log's last one
// (t) chain back, link by link, to the record h names, within maxLag
// records. Lines that are not records are passed over (as many again
// are allowed); Verify judges them.
func chainReaches(f *os.File, t tail, h Head, maxLag int64) bool {
	if h.Seq == t.last.Seq-1 {
		return h.Hash == t.lastPrev
	}
	if t.last.Seq-h.Seq > maxLag {
		return false
	}
	want := Head{Seq: t.last.Seq - 1, Hash: t.lastPrev}
	back := backLines{f: f, end: t.lastStart - 1, winStart: t.lastStart - 1}
	noFields := func(string) bool { return false }
	var lr lineReader
	for lines := int64(0); back.end >= 0 && lines < 2*maxLag; lines++ {
		start, line, err := back.prev()
		if err != nil {
			return false
		}
		if rec, sum, perr := lr.parse(line, noFields, true); perr == nil {
			if sum != rec.Hash || rec.Seq != want.Seq || rec.Hash != want.Hash {
				return false
			}
			if rec.Seq == h.Seq {
				return rec.Hash == h.Hash
			}
			want = Head{Seq: rec.Seq - 1, Hash: rec.Prev}
		}
		if start == 0 {
			return false
		}
	}
	return false
}

// backLines reads the lines of f backwards from end (exclusive, at a
// newline), a large block at a time, for a walk over many records.
type backLines struct {
	f        *os.File
	end      int64  // the end of the next line to return
	win      []byte // the bytes of f from winStart up to at least end
	winStart int64
}

// backBlock is how much backLines reads at a time.
const backBlock = 1 << 20

// prev returns the line that ends at b.end and its start offset, and
// moves b.end before it. A line longer than maxTailLine bytes is a
// CorruptError naming its start.
func (b *backLines) prev() (int64, []byte, error) {
	for {
		rel := b.end - b.winStart
		if i := bytes.LastIndexByte(b.win[:rel], '\n'); i >= 0 || b.winStart == 0 {
			start := b.winStart + int64(i) + 1
			line := b.win[i+1 : rel]
			b.end = start - 1
			return start, line, nil
		}
		if b.end-b.winStart > maxTailLine {
			return 0, nil, tooLong(b.f, b.winStart, b.end, false)
		}
		from := max(0, b.winStart-backBlock)
		win := make([]byte, int(b.winStart-from)+int(rel))
		if _, err := b.f.ReadAt(win[:b.winStart-from], from); err != nil && err != io.EOF {
			return 0, nil, fmt.Errorf("audit: read %s: %w", b.f.Name(), err)
		}
		copy(win[b.winStart-from:], b.win[:rel])
		b.win, b.winStart = win, from
	}
}

// lineBefore returns the line that ends at offset end (exclusive, at a
// newline or the end of the file) and its start offset. A line longer than
// maxTailLine bytes is a CorruptError naming its start.
func lineBefore(f *os.File, end int64) (int64, []byte, error) {
	const chunk = 64 << 10
	var line []byte
	pos := end
	for pos > 0 {
		n := min(int64(chunk), pos)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos-n); err != nil && err != io.EOF {
			return 0, nil, fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
		start := pos - n
		i := bytes.LastIndexByte(buf, '\n')
		if i >= 0 {
			start += int64(i) + 1
		}
		if end-start > maxTailLine {
			return 0, nil, tooLong(f, start, end, i >= 0)
		}
		if i >= 0 {
			return start, append(buf[i+1:], line...), nil
		}
		line = append(buf, line...)
		pos -= n
	}
	return 0, line, nil
}

// tooLong is the CorruptError for a line that ends at end and is longer
// than maxTailLine; from is its start when found, else a point inside it
// from which lineStart looks further back.
func tooLong(f *os.File, from, end int64, found bool) error {
	start := from
	if !found {
		start = lineStart(f, from)
	}
	return &CorruptError{Path: f.Name(), Offset: start,
		Reason: fmt.Sprintf("a line of %d bytes (ending at offset %d) is longer than %d bytes", end-start, end, maxTailLine)}
}

// lineStart returns the start of the line that contains the byte before
// pos, reading back in fixed chunks; a read error gives pos.
func lineStart(f *os.File, pos int64) int64 {
	buf := make([]byte, 64<<10)
	for pos > 0 {
		n := min(int64(len(buf)), pos)
		if _, err := f.ReadAt(buf[:n], pos-n); err != nil && err != io.EOF {
			return pos
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos - n + int64(i) + 1
		}
		pos -= n
	}
	return 0
}
