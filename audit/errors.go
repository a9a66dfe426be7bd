package audit

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// RecoveryKind says what a Recovery repaired.
type RecoveryKind string

const (
	// RecoveredTorn: lines that never became records were closed and named
	// by a log_recovered record.
	RecoveredTorn RecoveryKind = "torn"
	// RecoveredNewline: the last record was complete but lacked its
	// newline, which was appended.
	RecoveredNewline RecoveryKind = "newline"
	// RecoveredHead: the head file was one record behind and was
	// rewritten, or it was missing and a log_recovered record with
	// head=missing was appended (which rewrote it).
	RecoveredHead RecoveryKind = "head"
	// RecoveredCut: records this Log had written or seen were no longer
	// in the log (it was truncated or rewritten shorter, or deleted with
	// its head); a log_recovered record with a cut or a shrunk member
	// names them.
	RecoveredCut RecoveryKind = "cut"
	// RecoveredCopy: the copy of the head kept outside the project was
	// missing, torn or behind the log; a log_recovered record with a copy
	// member says so, and the copy was written again.
	RecoveredCopy RecoveryKind = "copy"
)

// Recovery is one repair a Log made to a log a crash left behind. It is a
// warning for the operator; String gives a one-line message.
type Recovery struct {
	Kind RecoveryKind
	Path string // the file repaired
	// Seq is the log_recovered record's seq (RecoveredTorn), the record
	// that got its newline (RecoveredNewline), or the seq the head now
	// names (RecoveredHead; for a missing head, the log_recovered record).
	Seq    int64
	Torn   []TornLine // RecoveredTorn only
	Detail string     // RecoveredHead, RecoveredCut and RecoveredCopy
}

func (r Recovery) String() string {
	switch r.Kind {
	case RecoveredTorn:
		var n int64
		for _, t := range r.Torn {
			n += t.Bytes
		}
		return fmt.Sprintf("%s: %d torn line(s), %d bytes from offset %d, never became records; closed and recorded as seq %d (%s)",
			r.Path, len(r.Torn), n, r.Torn[0].Offset, r.Seq, TypeLogRecovered)
	case RecoveredNewline:
		return fmt.Sprintf("%s: seq %d was complete but lacked its newline; newline appended", r.Path, r.Seq)
	case RecoveredCut, RecoveredCopy:
		return fmt.Sprintf("%s: %s; recorded as seq %d (%s)", r.Path, r.Detail, r.Seq, TypeLogRecovered)
	default:
		return fmt.Sprintf("%s: %s; rewritten to seq %d", r.Path, r.Detail, r.Seq)
	}
}

// HeadMismatchError means the log does not end with the record its head
// file names: its tail was cut off, or the log or the head was replaced.
type HeadMismatchError struct {
	LogPath, HeadPath string
	Log               Head // the log's last complete record ({0, GenesisPrev} if none)
	Head              Head // what the head file names
}

func (e *HeadMismatchError) Error() string {
	if e.Head.Seq > e.Log.Seq {
		return fmt.Sprintf("audit: %s ends at seq %d but %s records seq %d: the log was truncated; run "+selfcmd.Name()+" audit verify",
			e.LogPath, e.Log.Seq, e.HeadPath, e.Head.Seq)
	}
	return fmt.Sprintf("audit: %s ends at seq %d (%s) but %s records seq %d (%s): log or head was replaced; run "+selfcmd.Name()+" audit verify",
		e.LogPath, e.Log.Seq, e.Log.Hash, e.HeadPath, e.Head.Seq, e.Head.Hash)
}

// CorruptError means the end of the log cannot be recovered automatically:
// its last record was altered, or too much of it is not records.
type CorruptError struct {
	Path   string
	Offset int64 // byte offset of the line at fault
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("audit: %s: offset %d: %s; run "+selfcmd.Name()+" audit verify", e.Path, e.Offset, e.Reason)
}

// WriteError means records could not be written: the lock could not be
// taken, or a write, fsync or head rewrite failed. Err is the OS error
// (errors.Is(err, syscall.ENOSPC) sees through it).
type WriteError struct {
	Path   string // the file at fault: the log, its head or its lock file
	Op     string // "lock", "write", "fsync", "head", or "cut" (ErrCut)
	Err    error
	Lost   int    // records of this step that are not in the log, now counted for a records_lost record
	Detail string // for Op "head": what the log holds
}

func (e *WriteError) Error() string {
	msg := fmt.Sprintf("audit: %s %s: %v", e.Op, e.Path, e.Err)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Lost > 0 {
		msg += fmt.Sprintf("; %d record(s) not written", e.Lost)
	}
	return msg
}

func (e *WriteError) Unwrap() error { return e.Err }

// cause is what failed, for a records_lost record: "write FILE: ERR".
func (e *WriteError) cause() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }

// unwrapPath returns the OS error inside an error that names a path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// Cut is the cut member of a log_recovered record (FieldCut): records
// From to To (seqs, inclusive) were in the log and are no longer; Head is
// the last head the writer knew, that of seq To.
type Cut struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
	Head Head  `json:"head"`
}

func (c Cut) String() string {
	return fmt.Sprintf("records seq %d to %d were cut from the log while it was open (truncated, or deleted with its head); the last head was seq %d %s",
		c.From, c.To, c.Head.Seq, c.Head.Hash)
}

// Shrunk is the shrunk member of a log_recovered record (FieldShrunk): the
// log was Size bytes, ending with Head, when its writer last wrote it, and
// was found Found bytes long while it was open, still ending at or past
// Head's seq: records before it were cut or rewritten.
type Shrunk struct {
	Size  int64 `json:"size"`
	Found int64 `json:"found"`
	Head  Head  `json:"head"`
}

func (s Shrunk) String() string {
	return fmt.Sprintf("the log was %d bytes, up to seq %d %s, when its writer last wrote it and was found %d bytes while it was open: records were cut or rewritten",
		s.Size, s.Head.Seq, s.Head.Hash, s.Found)
}

// ErrCut is the cause, in a *WriteError of Op "cut", of a step that found
// records its Log had written no longer in the log (a Cut or a Shrunk):
// that step appends only the log_recovered record that says so, and its
// own records are not written, so that what they guard is not done while
// the log loses records (no action without its audit record). The next
// step writes again.
var ErrCut = errors.New("records this writer wrote are gone from the log")
