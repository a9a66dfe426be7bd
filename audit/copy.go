package audit

// The copy of the head kept outside the project (Options.CopyDir): written
// by every step alongside the head file, with the signed checkpoints, and
// compared with the log by the writer's catch-up and by Verify (see the
// package doc, "Copy of the head").

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// CopyHeadPath returns the copy, in dir, of the head of the log at
// logPath: dir/<HeadPath's base name> ("audit.head").
func CopyHeadPath(dir, logPath string) string {
	return filepath.Join(dir, filepath.Base(HeadPath(logPath)))
}

// CopyCheckpointsPath returns the file, in dir, that keeps the seq and
// hash of each checkpoint record (Event.Checkpoint) of the log at logPath:
// dir/<log name without ".jsonl">.checkpoints.jsonl
// ("audit.checkpoints.jsonl"), one JSON object a line:
//
//	{"seq":42,"hash":"sha256:…"}
func CopyCheckpointsPath(dir, logPath string) string {
	return filepath.Join(dir, strings.TrimSuffix(filepath.Base(logPath), ".jsonl")+".checkpoints.jsonl")
}

// maxCheckpointsFile bounds what Verify reads of a checkpoints file, in
// bytes: about 70 bytes a line, so a million checkpoints.
const maxCheckpointsFile = 64 << 20

// What a writer's catch-up found of the copy of the head, in the state
// member of a FieldCopy.
const (
	CopyMissing = "missing" // no copy, while the log has records
	CopyTorn    = "torn"    // a copy torn by a crash during its rewrite
	CopyBehind  = "behind"  // a copy naming an earlier record of the chain
)

// CopyFound is the copy member of a log_recovered record (FieldCopy): when
// a writer caught up with the log, the copy of its head at Path was
// missing, torn, or behind the log (then Head is what it named). The
// records up to the one before the log_recovered record were not anchored
// by the copy when they were found; from that record on they are.
type CopyFound struct {
	State string `json:"state"`
	Path  string `json:"path"`
	Head  *Head  `json:"head,omitempty"`
}

func (c CopyFound) String() string {
	switch c.State {
	case CopyBehind:
		if c.Head != nil {
			return fmt.Sprintf("the copy of the head at %s named seq %d, behind the log", c.Path, c.Head.Seq)
		}
	case CopyTorn:
		return fmt.Sprintf("the copy of the head at %s was torn by a crash during its rewrite", c.Path)
	}
	return fmt.Sprintf("the copy of the head at %s was %s", c.Path, c.State)
}

// CopyMismatchError means the log does not hold the record that the copy
// of its head kept outside the project names: the log was rewritten or
// cut while no writer that keeps the copy had it open, or records were
// appended by one that does not keep it. A writer refuses such a log.
type CopyMismatchError struct {
	LogPath, CopyPath string
	Log               Head // the log's last record
	Copy              Head // what the copy names
	Found             string
}

func (e *CopyMismatchError) Error() string {
	return fmt.Sprintf("audit: %s: %s; the copy of its head kept outside the project, %s, names seq %d %s: run %s audit verify; to accept the log as it is, remove %s",
		e.LogPath, e.Found, e.CopyPath, e.Copy.Seq, e.Copy.Hash, selfcmd.Name(), e.CopyPath)
}

// checkCopy compares the copy of the head with the log's tail t, under
// the lock: nil when it names t's last record, or when it is missing and
// the log has none; a CopyFound for the log_recovered record when it is
// missing, torn or behind a chain that leads back to it; a
// *CopyMismatchError otherwise.
func (l *Log) checkCopy(t tail) (*CopyFound, error) {
	if l.copyDir == "" {
		return nil, nil
	}
	path := l.cf.path
	h, ok, err := readHeadOnce(path)
	var torn *TornHeadError
	switch {
	case errors.As(err, &torn):
		if t.last.Seq == 0 {
			return nil, nil
		}
		return &CopyFound{State: CopyTorn, Path: path}, nil
	case err != nil:
		return nil, fmt.Errorf("audit: copy of the head kept outside the project: %w", err)
	case !ok:
		if t.last.Seq == 0 {
			return nil, nil
		}
		return &CopyFound{State: CopyMissing, Path: path}, nil
	case h == t.last:
		return nil, nil
	case h.Seq < t.last.Seq && chainReaches(l.f, t, h, maxHeadLag):
		// A writer killed between appending records and syncing them
		// leaves the head file as far behind as the copy (it writes the
		// copy first); a head file ahead of the copy was written by a
		// writer that does not keep it.
		if own, ok, err := readHeadOnce(l.headPath); err != nil || !ok || own.Seq <= h.Seq {
			return &CopyFound{State: CopyBehind, Path: path, Head: &h}, nil
		}
	}
	e := &CopyMismatchError{LogPath: l.path, CopyPath: path, Log: t.last, Copy: h}
	switch {
	case h.Seq > t.last.Seq:
		e.Found = fmt.Sprintf("ends at seq %d: records were cut", t.last.Seq)
	case h.Seq == t.last.Seq:
		e.Found = fmt.Sprintf("seq %d has hash %s: the log was rewritten", t.last.Seq, t.last.Hash)
	default:
		e.Found = fmt.Sprintf("goes on to seq %d, past the copy's, further than a killed writer leaves it or with the head file in the project ahead of the copy: records were appended by a writer that does not keep the copy (an older mcpepoch, one that followed XDG_STATE_HOME or HOME, or not mcpepoch), or the log was rewritten", t.last.Seq)
	}
	return nil, e
}

// writeCopy appends ck, the checkpoint records made durable, to the
// checkpoints file and writes head to the copy of the head, creating
// their directory (mode 0700) when it is missing. Nothing without a
// CopyDir.
func (l *Log) writeCopy(head Head, ck []Head) error {
	if l.copyDir == "" {
		return nil
	}
	err := l.writeCopyOnce(head, ck)
	if errors.Is(err, os.ErrNotExist) {
		if merr := os.MkdirAll(l.copyDir, 0o700); merr != nil {
			return &WriteError{Path: l.copyDir, Op: "copy", Err: unwrapPath(merr),
				Detail: "the directory of the copy of the head cannot be made"}
		}
		err = l.writeCopyOnce(head, ck)
	}
	return err
}

func (l *Log) writeCopyOnce(head Head, ck []Head) error {
	if len(ck) > 0 {
		var b []byte
		for _, h := range ck {
			line, _ := json.Marshal(h)
			b = append(append(b, line...), '\n')
		}
		f, err := os.OpenFile(l.ckPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
		if err != nil {
			return copyErr(l.ckPath, err)
		}
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return copyErr(l.ckPath, err)
		}
	}
	if err := l.cf.write(head); err != nil {
		return copyErr(l.cf.path, err)
	}
	return nil
}

func copyErr(path string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return err // writeCopy makes the directory and tries again
	}
	return &WriteError{Path: path, Op: "copy", Err: unwrapPath(err),
		Detail: "records appended, the copy of the head kept outside the project not updated"}
}

// checkpointsOf returns the seq and hash of the records of recs whose
// event (in evs) is a checkpoint.
func checkpointsOf(recs []sealed, evs []Event) []Head {
	var out []Head
	for _, r := range recs {
		if r.ev < len(evs) && evs[r.ev].Checkpoint {
			out = append(out, Head{Seq: r.seq, Hash: r.hash()})
		}
	}
	return out
}

// readCheckpoints reads a checkpoints file: ok is false, with a nil
// error, when there is none.
func readCheckpoints(path string) (cks []Head, lines []int, ok bool, err error) {
	b, err := safefile.ReadFileNoFollow(path, maxCheckpointsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var h Head
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil || h.Seq < 1 || checkDigest(h.Hash) != nil {
			return nil, nil, true, fmt.Errorf("%s:%d: not a checkpoint line ({\"seq\":N,\"hash\":\"sha256:…\"})", path, n)
		}
		cks, lines = append(cks, h), append(lines, n)
	}
	return cks, lines, true, nil
}

// checkCopy compares the log as read with the copy of its head, and its
// checkpoints, in dir (see the package doc, "Copy of the head").
func (v *verifier) checkCopy(dir string) {
	path := CopyHeadPath(dir, v.path)
	last := v.rep.Last
	v.rep.CopyPath = path
	h, ok, err := ReadHead(path)
	var torn *TornHeadError
	switch {
	case errors.As(err, &torn):
		v.rep.Warnings = append(v.rep.Warnings, Problem{Kind: WarnCopyTorn, Path: path,
			Msg: "the copy of the head kept outside the project was torn by a crash during its rewrite: the log cannot be compared with it; the next writer records that and writes it again"})
	case err != nil:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: path, Msg: err.Error()})
	case !ok:
		if last.Seq > 0 {
			v.rep.Warnings = append(v.rep.Warnings, Problem{Kind: WarnCopyMissing, Path: path,
				Msg: fmt.Sprintf("no copy of the head outside the project: nothing outside it vouches for records 1 to %d (written before a writer kept a copy there: an older mcpepoch, a project moved, the state directory removed, or an older mcpepoch that followed XDG_STATE_HOME or HOME); the next host keeps one from now on", last.Seq)})
		}
	case h.Seq > last.Seq:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: path, Seq: h.Seq,
			Msg:      fmt.Sprintf("the copy of the head kept outside the project names seq %d, but the log ends at seq %d: records were cut from the log", h.Seq, last.Seq),
			Expected: h.Hash, Found: last.Hash})
	case h.Hash != v.hashOf(h.Seq):
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: path, Seq: h.Seq,
			Msg:      fmt.Sprintf("the copy of the head kept outside the project names another hash for seq %d: the log was rewritten", h.Seq),
			Expected: h.Hash, Found: v.hashOf(h.Seq)})
	case h.Seq < last.Seq && last.Seq-h.Seq <= maxHeadLag && (v.head == nil || v.head.Seq <= h.Seq):
		// What a writer killed between appending records and making
		// them durable leaves: the head file as far behind.
		v.rep.Warnings = append(v.rep.Warnings, Problem{Kind: WarnCopyBehind, Path: path, Seq: h.Seq,
			Msg: fmt.Sprintf("the copy of the head kept outside the project names seq %d: nothing outside the project vouches for records %d to %d (a host killed before it synced them, or records appended since by something else); the next host start records that in the log", h.Seq, h.Seq+1, last.Seq)})
	case h.Seq < last.Seq:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyUnanchored, Path: path, Seq: h.Seq,
			Msg: fmt.Sprintf("the copy of the head kept outside the project names seq %d; nothing outside the project vouches for records %d to %d, which a head file in the project names: appended by a writer that does not keep this copy (an older mcpepoch, one that followed XDG_STATE_HOME or HOME, or not mcpepoch)", h.Seq, h.Seq+1, last.Seq)})
	default:
		v.rep.CopyAgrees = true
	}
	ckPath := CopyCheckpointsPath(dir, v.path)
	cks, lines, _, err := readCheckpoints(ckPath)
	if err != nil {
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: ckPath, Msg: err.Error()})
		return
	}
	for i, c := range cks {
		switch found := v.hashOf(c.Seq); {
		case c.Seq > last.Seq:
			v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: ckPath, Line: lines[i], Seq: c.Seq,
				Msg: fmt.Sprintf("signed checkpoint kept outside the project: the log ends at seq %d: records were cut from the log", last.Seq), Expected: c.Hash, Found: "none"})
		case found != c.Hash:
			v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemCopyMismatch, Path: ckPath, Line: lines[i], Seq: c.Seq,
				Msg: "signed checkpoint kept outside the project: the record at this seq has another hash: the log was rewritten", Expected: c.Hash, Found: found})
		}
	}
	v.rep.Checkpoints = len(cks)
}

// copyRecovery reports a log_recovered record with a copy member as a
// warning naming what was found, or a problem when the member is not a
// CopyFound.
func (v *verifier) copyRecovery(rec Record, line int) {
	cv, ok := rec.Fields[FieldCopy]
	if !ok {
		return
	}
	var c CopyFound
	b, err := json.Marshal(cv)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || (c.State != CopyMissing && c.State != CopyTorn && c.State != CopyBehind) || c.Path == "" || (c.State == CopyBehind) != (c.Head != nil) {
		v.problem(Problem{Kind: ProblemBadRecovery, Line: line, Seq: rec.Seq,
			Msg: fmt.Sprintf("log_recovered record: member %q: want {state: missing, torn or behind, path, head when behind}", FieldCopy)})
		return
	}
	from := int64(1)
	if c.Head != nil {
		from = c.Head.Seq + 1
	}
	what := "records before it"
	if from > 1 {
		what = fmt.Sprintf("records %d to %d", from, rec.Seq-1)
	}
	v.warn(Problem{Kind: WarnCopyRecovered, Line: line, Seq: rec.Seq,
		Msg: fmt.Sprintf("%s: %s when a writer caught up: nothing outside the project vouched for %s", TypeLogRecovered, printable(c.String()), what)})
}
