package audit

// Catching up with the log file before a step: what another writer (or a
// crash, or a hand) did to the file and its head since this Log last
// looked, and the log_recovered record that says so (see the package doc).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// appendNewline closes the last line of the log.
func (l *Log) appendNewline() error {
	n, err := l.f.Write([]byte("\n"))
	l.size += int64(n)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		l.known = false
		return &WriteError{Path: l.path, Op: "write", Err: unwrapPath(err)}
	}
	return nil
}

// catchUp makes l.head and l.size describe the log's current end, reopening
// the log if the file at l.path was replaced, and repairs what a crash left
// behind. It runs under the lock.
// noteRecovered lists, for Recoveries, what the log_recovered record at
// seq stands for: a torn tail t.torn, a cut, a head file that was lost
// (HeadMissing or HeadTorn).
func (l *Log) noteRecovered(seq int64, t tail, cut *Cut, shrunk *Shrunk, headLost string) {
	if len(t.torn) > 0 {
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredTorn, Path: l.path, Seq: seq, Torn: t.torn})
	}
	if cut != nil {
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredCut, Path: l.path, Seq: seq, Detail: cut.String()})
	}
	if shrunk != nil {
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredCut, Path: l.path, Seq: seq, Detail: shrunk.String()})
	}
	if headLost != "" {
		what := "missing"
		if headLost == HeadTorn {
			what = "torn (a crash during its rewrite)"
		}
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredHead, Path: l.headPath, Seq: seq,
			Detail: fmt.Sprintf("head file was %s with the log at seq %d; recorded as seq %d (%s %s=%s)",
				what, t.last.Seq, seq, TypeLogRecovered, FieldHead, headLost)})
	}
}

func (l *Log) catchUp() error {
	if l.known && l.f != nil && unchanged(l.fid, l.path, l.size) {
		return nil
	}
	if err := l.reopenIfReplaced(); err != nil {
		return err
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if l.known && fi.Size() == l.size {
		return nil
	}
	t, err := scanTail(l.f, fi.Size())
	if err != nil {
		return err
	}
	was, known := l.size, l.known // what this Log left, if it knows
	l.size = fi.Size()
	seen := l.head // the last record this Log wrote or caught up with
	l.head = t.last

	fd, err := l.compare(t, seen, was, known)
	if err != nil {
		return err
	}
	if fd.cut == nil && fd.shrunk == nil {
		if fd.copy, err = l.checkCopy(t); err != nil {
			return err
		}
	}
	cut, shrunk, headLost := fd.cut, fd.shrunk, fd.headLost
	var prefix []byte
	if !t.endsNL {
		prefix = []byte("\n")
	}
	fields := fd.fields(t)
	switch {
	case len(fields) > 0:
		if prefix != nil && len(t.torn) == 0 {
			// The last record is complete and lacks only its newline.
			l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredNewline, Path: l.path, Seq: t.last.Seq})
		}
		recs, err := l.commit(prefix, []Event{{Type: TypeLogRecovered, Fields: fields}})
		if err != nil {
			return err
		}
		l.noteRecovered(recs[0].seq, t, cut, shrunk, headLost)
		if fd.copy != nil {
			l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredCopy, Path: fd.copy.Path, Seq: recs[0].seq, Detail: fd.copy.String()})
		}
		if cut != nil || shrunk != nil {
			l.known = true
			return l.cutError(recs[0].seq, cut, shrunk)
		}
	case prefix != nil:
		// The last record is complete and lacks only its newline.
		if err := l.appendNewline(); err != nil {
			return err
		}
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredNewline, Path: l.path, Seq: t.last.Seq})
		fallthrough
	default:
		if fd.headStale {
			if err := l.hf.write(l.head); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
		}
	}
	l.known = true
	return nil
}

// finding is what catchUp found the log's tail to say about records this
// Log knew of and about the head file.
type finding struct {
	cut       *Cut
	shrunk    *Shrunk
	headStale bool
	headLost  string // HeadMissing or HeadTorn
	copy      *CopyFound
}

// compare sets the log's tail t against seen, the last record this Log
// wrote or caught up with, and was, the size it left the log at (when
// known). It runs under the lock.
func (l *Log) compare(t tail, seen Head, was int64, known bool) (finding, error) {
	var fd finding
	var err error
	switch {
	case seen.Seq > t.last.Seq:
		// Records this Log knew of are gone: the head file cannot tell
		// (it was deleted too, or names them), so the memory of them goes
		// into the chain, which goes on from what is left.
		fd.cut = &Cut{From: t.last.Seq + 1, To: seen.Seq, Head: seen}
	case known && l.size < was:
		// Shorter than this Log left it, though its end is still there:
		// other writers only append, so lines before it were cut.
		fd.shrunk = &Shrunk{Size: was, Found: l.size, Head: seen}
	default:
		fd.headStale, fd.headLost, err = l.checkHead(t)
	}
	return fd, err
}

// fields are the members of the log_recovered record fd and the tail t
// call for; none when nothing is to be recorded.
func (fd finding) fields(t tail) map[string]any {
	fields := map[string]any{}
	if len(t.torn) > 0 {
		fields[FieldTorn] = t.torn
	}
	if fd.headLost != "" {
		fields[FieldHead] = fd.headLost
	}
	if fd.cut != nil {
		fields[FieldCut] = fd.cut
	}
	if fd.shrunk != nil {
		fields[FieldShrunk] = fd.shrunk
	}
	if fd.copy != nil {
		fields[FieldCopy] = fd.copy
	}
	return fields
}

// cutError is the error of the step that recorded a cut or a shrunk log
// as seq (ErrCut): its own records are not written.
func (l *Log) cutError(seq int64, cut *Cut, shrunk *Shrunk) error {
	what := ""
	if cut != nil {
		what = cut.String()
	} else {
		what = shrunk.String()
	}
	return &WriteError{Path: l.path, Op: "cut", Err: fmt.Errorf("%w: %s; recorded as seq %d (%s), and this step's records not written", ErrCut, what, seq, TypeLogRecovered)}
}

// checkHead compares the head file with the log's tail t: stale when the
// head lags a chain that leads back to it (the next step rewrites it),
// lost (HeadMissing) when the log has records and no head, or (HeadTorn)
// a head torn by a crash. It runs under the lock.
func (l *Log) checkHead(t tail) (stale bool, lost string, err error) {
	h, ok, err := readHeadOnce(l.headPath)
	var torn *TornHeadError
	if errors.As(err, &torn) {
		// A crash during the in-place rewrite (under this lock, so no
		// writer is mid-rewrite now): what the head named is gone, as if
		// it were deleted, and the chain says so.
		return false, HeadTorn, nil
	}
	if err != nil {
		return false, "", fmt.Errorf("audit: %w", err)
	}
	switch {
	case !ok:
		// The log has records but no head: the head was deleted, perhaps
		// with records cut from the end. Rewriting it silently would make
		// the cut log verify as intact, so the gap goes into the chain.
		if t.last.Seq > 0 {
			lost = HeadMissing
		}
	case h == t.last:
	case h.Seq < t.last.Seq && chainReaches(l.f, t, h, maxLazyLag):
		stale = true
		behind := "one record"
		if n := t.last.Seq - h.Seq; n > 1 {
			behind = fmt.Sprintf("%d records", n)
		}
		l.recoveries = append(l.recoveries, Recovery{Kind: RecoveredHead, Path: l.headPath, Seq: t.last.Seq,
			Detail: fmt.Sprintf("head was %s behind (seq %d); the writer stopped before updating it", behind, h.Seq)})
	default:
		return false, "", &HeadMismatchError{LogPath: l.path, HeadPath: l.headPath, Log: t.last, Head: h}
	}

	return stale, lost, nil
}

// errReplaced is the cause of a write whose file was replaced meanwhile.
var errReplaced = errors.New("the path no longer names the file the records were written to (replaced, moved aside, removed, or a symbolic link put in its place): they are in no log")

// stillAtPath returns a *WriteError when l.path no longer names the file
// l.f is, as Lstat sees it (a symbolic link put in its place, even to the
// file itself, is no log file), nil when it does.
func (l *Log) stillAtPath() *WriteError {
	if same, known := stillNamed(l.fid, l.path); known {
		if same {
			return nil
		}
		return &WriteError{Path: l.path, Op: "write", Err: errReplaced}
	}
	cur, err1 := l.f.Stat()
	now, err2 := os.Lstat(l.path)
	if err1 == nil && err2 == nil && os.SameFile(cur, now) {
		return nil
	}
	return &WriteError{Path: l.path, Op: "write", Err: errReplaced}
}

// reopenIfReplaced opens l.path if no file is open yet or if the file at
// l.path is no longer the one open (moved aside, deleted, replaced).
func (l *Log) reopenIfReplaced() error {
	if l.f != nil {
		cur, err1 := l.f.Stat()
		now, err2 := os.Stat(l.path)
		if err1 == nil && err2 == nil && os.SameFile(cur, now) {
			return nil
		}
		l.f.Close()
		l.f = nil
		l.known = false
	}
	f, created, err := openLog(l.path)
	if err != nil {
		if fi, lerr := os.Lstat(l.path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("audit: %s is a symbolic link: refusing to append through it (move it aside)", l.path)
		}
		return fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("audit: %s is not a regular file (%v): refusing to append to it", l.path, fi.Mode().Type())
	}
	l.f, l.fid = f, fileID{}
	if err == nil {
		l.fid = idOf(fi)
	}
	if !created {
		return nil
	}
	return syncDir(filepath.Dir(l.path))
}

// openLog opens the log at path for appending, creating it (mode 0600) if
// it does not exist; created reports that it did, or that the file is
// still empty. Then the caller fsyncs the directory, so that the file
// whose records it is about to fsync cannot vanish in a crash. A log that
// holds records was created, and its directory synced, by the Log that
// first wrote to it (under the lock, before its first record), so opening
// it again costs no directory fsync.
func openLog(path string) (f *os.File, created bool, err error) {
	const flags = os.O_RDWR | os.O_APPEND | noFollow
	f, err = os.OpenFile(path, flags, 0)
	if errors.Is(err, os.ErrNotExist) {
		created = true
		f, err = os.OpenFile(path, flags|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, false, err
	}
	if !created {
		fi, err := f.Stat()
		created = err != nil || fi.Size() == 0
	}
	return f, created, nil
}
