package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/safefile"

	"strings"
)

// Verify walks the log at logPath and checks, for every line, that it is a
// record, that its hash matches its contents, that its prev is the hash of
// the record before it (GenesisPrev for the first) and that its seq is one
// more than that record's (1 for the first). It then checks that the log
// ends with the record the head file at headPath names; an empty headPath
// skips that check. It resynchronizes after each finding, so one deleted,
// edited or moved line yields findings on the lines around it, not on every
// later line. Lines that are not records are warnings when a crash
// explains them (see the package doc). Verify holds a shared lock on the
// log's lock file, if there is one, while it reads. The error is for a log
// that cannot be read; what is wrong with its contents is in the Report.
func Verify(logPath, headPath string) (*Report, error) {
	return VerifyScan(logPath, headPath, nil)
}

// VerifyScan is Verify that also calls fn, when not nil, with each record
// as it reads it, in file order, as Scan does: a log that verifies (the
// Report is OK) gave fn the records Read returns, in one pass with the
// check.
func VerifyScan(logPath, headPath string, fn func(Record)) (*Report, error) {
	return VerifyWith(logPath, VerifyOptions{Head: headPath}, fn)
}

// VerifyOptions says what Verify compares the log with besides itself.
type VerifyOptions struct {
	// Head is the head file; "" skips that check.
	Head string
	// CopyDir, when set, is the directory a writer keeps the copy of the
	// head and the checkpoints in (Options.CopyDir). The copy must name
	// a record of the log: one it names past the log's end, or with
	// another hash, is a problem (ProblemCopyMismatch: the log was cut or
	// rewritten); so is a copy behind a head file in the project, or
	// more than a batch behind the log's end (ProblemCopyUnanchored:
	// records nothing outside the project vouches for). A copy behind as
	// a writer killed before it synced leaves it (WarnCopyBehind), a
	// missing copy while the log has records (WarnCopyMissing) and a torn
	// one (WarnCopyTorn) are warnings. Every checkpoint kept there must be
	// a record of the log with that hash.
	CopyDir string
}

// VerifyWith is VerifyScan with the comparisons o names, made under the
// same shared lock as the read of the log.
func VerifyWith(logPath string, o VerifyOptions, fn func(Record)) (*Report, error) {
	release := readLock(logPath)
	defer release()
	f, err := safefile.OpenNoFollow(logPath)
	if errors.Is(err, os.ErrNotExist) {
		if rep := logGone(logPath, o); rep != nil {
			return rep, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	v := verifier{path: logPath, each: fn,
		rep: &Report{Last: Head{Hash: GenesisPrev}}}
	if o.Head != "" {
		// Read before the log, under the same lock: the time of the
		// first record the head does not name is noted on the way.
		h, ok, herr := ReadHead(o.Head)
		v.headRead = &headRead{h: h, ok: ok, err: herr}
	}
	err = eachLine(f, v.line)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", logPath, err)
	}
	v.finish()
	v.rep.NoOutcome = v.calls.warnings()
	for i := range v.rep.NoOutcome {
		v.rep.NoOutcome[i].Path = v.path // as every other warning names its file
	}
	if o.Head != "" {
		v.checkHead(o.Head)
	}
	if o.CopyDir != "" {
		v.checkCopy(o.CopyDir)
	}
	v.rep.OK = len(v.rep.Problems) == 0
	return v.rep, nil
}

// logGone reports a log that does not exist while its head, or the copy
// of its head, says records were written: it was deleted. nil when
// neither does (there was never a log).
func logGone(logPath string, o VerifyOptions) *Report {
	paths := []string{o.Head}
	if o.CopyDir != "" {
		paths = append(paths, CopyHeadPath(o.CopyDir, logPath))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if h, ok, herr := ReadHead(p); ok || herr != nil {
			return &Report{Last: Head{Hash: GenesisPrev}, Problems: []Problem{{Kind: ProblemLogMissing, Path: logPath,
				Msg: fmt.Sprintf("log missing, but %s records seq %d: the log was deleted or moved", p, h.Seq)}}}
		}
	}
	return nil
}

// tornLine is a line that is not a record, kept until the next record says
// whether a log_recovered record accounts for it.
type tornLine struct {
	n    int
	torn TornLine
	err  error
}

func newTornLine(l rawLine, err error) tornLine {
	return tornLine{n: l.n, err: err,
		torn: TornLine{Offset: l.off, Bytes: int64(len(l.b)), Digest: digestOf(l.b)}}
}

// recovers reports whether rec is a log_recovered record naming exactly
// the lines pending.
func recovers(rec Record, pending []tornLine) (bool, error) {
	if rec.Type != TypeLogRecovered {
		return false, nil
	}
	b, err := json.Marshal(rec.Fields[FieldTorn])
	if err != nil {
		return false, err
	}
	var listed []TornLine
	if err := json.Unmarshal(b, &listed); err != nil {
		return false, fmt.Errorf("member %q: %v", FieldTorn, err)
	}
	if len(listed) != len(pending) {
		return false, nil
	}
	for i, t := range listed {
		if t != pending[i].torn {
			return false, nil
		}
	}
	return true, nil
}

type verifier struct {
	path    string
	rep     *Report
	last    *Head // the last record seen: nil, or &end
	end     Head
	pending []tornLine
	bySeq   seqHashes // hash of each seq, first occurrence
	calls   outcomes  // calls sent, not yet paired with their end
	lines   lineReader
	each    func(Record) // VerifyScan's fn, or nil
	head    *Head        // what the head file names, once read
	// headRead is the head file as read before the log; after is the
	// time of the first record past the one it names.
	headRead *headRead
	after    time.Time
}

// headRead is what ReadHead returned.
type headRead struct {
	h   Head
	ok  bool
	err error
}

func (v *verifier) problem(p Problem) {
	p.Path = v.path
	v.rep.Problems = append(v.rep.Problems, p)
}

func (v *verifier) warn(p Problem) {
	p.Path = v.path
	v.rep.Warnings = append(v.rep.Warnings, p)
}

func (v *verifier) line(l rawLine) {
	v.rep.Lines++
	rec, sum, err := v.lines.parse(l.b, nil, true)
	if err != nil {
		v.pending = append(v.pending, newTornLine(l, err))
		return
	}
	rec.Line = l.n
	v.rep.Records++

	if len(v.pending) > 0 || rec.Type == TypeLogRecovered {
		ok, err := recovers(rec, v.pending)
		switch {
		case ok:
			for _, t := range v.pending {
				v.warn(Problem{Kind: WarnTornRecovered, Line: t.n,
					Msg: fmt.Sprintf("torn line (%d bytes) never became a record; closed by seq %d (%s)", t.torn.Bytes, rec.Seq, TypeLogRecovered)})
			}
		default:
			v.malformed()
			if rec.Type == TypeLogRecovered {
				msg := "log_recovered record does not name the lines before it that are not records"
				if err != nil {
					msg = fmt.Sprintf("log_recovered record: %v", err)
				}
				v.problem(Problem{Kind: ProblemBadRecovery, Line: l.n, Seq: rec.Seq, Msg: msg})
			}
		}
		v.pending = nil
	}

	if sum != rec.Hash {
		v.problem(Problem{Kind: ProblemEdited, Line: l.n, Seq: rec.Seq,
			Msg: "hash does not match the record's contents (edited)", Expected: sum, Found: rec.Hash})
	}
	wantPrev, wantSeq := GenesisPrev, int64(1)
	if v.last != nil {
		wantPrev, wantSeq = v.last.Hash, v.last.Seq+1
	}
	switch {
	case rec.Seq > wantSeq && v.last == nil:
		v.problem(Problem{Kind: ProblemSeqGap, Line: l.n, Seq: rec.Seq,
			Msg:      fmt.Sprintf("first record has seq %d: %d record(s) missing before it", rec.Seq, rec.Seq-1),
			Expected: "1", Found: fmt.Sprint(rec.Seq)})
	case rec.Seq > wantSeq:
		v.problem(Problem{Kind: ProblemSeqGap, Line: l.n, Seq: rec.Seq,
			Msg:      fmt.Sprintf("follows seq %d: %d record(s) missing (deleted line?)", v.last.Seq, rec.Seq-wantSeq),
			Expected: fmt.Sprint(wantSeq), Found: fmt.Sprint(rec.Seq)})
	case rec.Seq < wantSeq:
		v.problem(Problem{Kind: ProblemSeqOrder, Line: l.n, Seq: rec.Seq,
			Msg:      fmt.Sprintf("follows seq %d: out of order or duplicated", v.last.Seq),
			Expected: fmt.Sprint(wantSeq), Found: fmt.Sprint(rec.Seq)})
	}
	if rec.Prev != wantPrev {
		msg := "prev of the first record is not the genesis value"
		if v.last != nil {
			msg = fmt.Sprintf("prev does not match hash of seq %d", v.last.Seq)
		}
		v.problem(Problem{Kind: ProblemBrokenLink, Line: l.n, Seq: rec.Seq, Msg: msg, Expected: wantPrev, Found: rec.Prev})
	}
	if rec.Type == TypeLogRecovered {
		v.headRecovery(rec, l.n)
		v.cutRecovery(rec, l.n)
		v.copyRecovery(rec, l.n)
	}
	if rec.Type == TypeRecordsLost {
		v.recordsLost(rec, l.n)
	}
	v.calls.note(rec)
	if v.each != nil {
		v.each(rec)
	}
	if !l.terminated {
		v.warn(Problem{Kind: WarnMissingNewline, Line: l.n, Seq: rec.Seq,
			Msg: "last record is complete but lacks its newline (the writer stopped; the next Open appends it)"})
	}
	if r := v.headRead; r != nil && r.ok && rec.Seq == r.h.Seq+1 && v.after.IsZero() {
		v.after = rec.Time
	}
	v.bySeq.note(rec.Seq, rec.Hash)
	v.end = Head{Seq: rec.Seq, Hash: rec.Hash}
	v.last = &v.end
	v.rep.Last = Head{Seq: rec.Seq, Hash: rec.Hash}
}

// headRecovery reports a log_recovered record with a head member: a
// warning for head=missing or head=torn, a problem for any other value.
func (v *verifier) headRecovery(rec Record, line int) {
	hv, ok := rec.Fields[FieldHead]
	if !ok {
		return
	}
	what := "missing"
	switch hv {
	case HeadMissing:
	case HeadTorn:
		what = "torn by a crash during its rewrite"
	default:
		v.problem(Problem{Kind: ProblemBadRecovery, Line: line, Seq: rec.Seq,
			Msg: fmt.Sprintf("log_recovered record: member %q: want %q or %q", FieldHead, HeadMissing, HeadTorn)})
		return
	}
	after := "the start of the log"
	if v.last != nil {
		after = fmt.Sprintf("seq %d", v.last.Seq)
	}
	v.warn(Problem{Kind: WarnHeadWasMissing, Line: line, Seq: rec.Seq,
		Msg: fmt.Sprintf("%s: the head file was %s when the log was reopened after %s; records cut from the end of the log before this record cannot be detected (compare with a copy of the head kept elsewhere)",
			TypeLogRecovered, what, after)})
}

// cutRecovery reports a log_recovered record with a cut or a shrunk
// member: records a writer had written were cut from the log, a problem
// whatever follows.
func (v *verifier) cutRecovery(rec Record, line int) {
	if sv, ok := rec.Fields[FieldShrunk]; ok {
		var s Shrunk
		b, err := json.Marshal(sv)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || s.Found >= s.Size {
			v.problem(Problem{Kind: ProblemBadRecovery, Line: line, Seq: rec.Seq,
				Msg: fmt.Sprintf("log_recovered record: member %q: want {size, found, head} with found < size", FieldShrunk)})
			return
		}
		v.problem(Problem{Kind: ProblemCut, Line: line, Seq: rec.Seq,
			Msg: fmt.Sprintf("%s: %s", TypeLogRecovered, printable(s.String()))})
	}
	cv, ok := rec.Fields[FieldCut]
	if !ok {
		return
	}
	var c Cut
	b, err := json.Marshal(cv)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.From < 1 || c.To < c.From {
		v.problem(Problem{Kind: ProblemBadRecovery, Line: line, Seq: rec.Seq,
			Msg: fmt.Sprintf("log_recovered record: member %q: want {from, to, head} with 1 <= from <= to", FieldCut)})
		return
	}
	from := "the start of the log"
	if c.From > 1 {
		from = fmt.Sprintf("seq %d", c.From-1)
	}
	v.problem(Problem{Kind: ProblemCut, Line: line, Seq: rec.Seq,
		Msg:      fmt.Sprintf("%s: %s; the chain goes on from %s", TypeLogRecovered, printable(c.String()), from),
		Expected: c.Head.Hash, Found: rec.Prev})
}

// recordsLost reports a records_lost record as a warning naming the gap.
func (v *verifier) recordsLost(rec Record, line int) {
	t, err := parseLost(rec.Fields)
	if err != nil {
		v.problem(Problem{Kind: ProblemBadRecovery, Line: line, Seq: rec.Seq, Msg: fmt.Sprintf("%s record: %v", TypeRecordsLost, err)})
		return
	}
	v.warn(Problem{Kind: WarnRecordsLost, Line: line, Seq: rec.Seq,
		Msg: fmt.Sprintf("%s: %s were never written: %s", TypeRecordsLost, t.summary(), printable(t.err))})
}

// malformed reports the pending lines as problems.
func (v *verifier) malformed() {
	for _, t := range v.pending {
		v.problem(Problem{Kind: ProblemMalformed, Line: t.n, Msg: fmt.Sprintf("not a record: %v", t.err)})
	}
}

// finish reports lines that are not records at the end of the log.
func (v *verifier) finish() {
	after := "the start of the log"
	if v.last != nil {
		after = fmt.Sprintf("seq %d", v.last.Seq)
	}
	if v.tailTooLong() {
		return
	}
	for _, t := range v.pending {
		v.warn(Problem{Kind: WarnTornTail, Line: t.n,
			Msg: fmt.Sprintf("torn tail: %d bytes after %s are not a record (%v); the writer stopped mid-record, the next Open closes it",
				t.torn.Bytes, after, t.err)})
	}
	v.pending = nil
}

// tailTooLong reports, as a problem, lines at the end that Open refuses to
// close (as scanTail does): more than maxTornLines of them, or one longer
// than maxTailLine bytes. A writer cannot leave either by stopping
// mid-record, so Open keeps the log as it is and Verify says why.
func (v *verifier) tailTooLong() bool {
	if len(v.pending) > maxTornLines {
		t := v.pending[len(v.pending)-maxTornLines-1]
		v.problem(Problem{Kind: ProblemTailTooLong, Line: t.n,
			Msg: fmt.Sprintf("offset %d: more than %d lines at the end are not records; no writer appends to the log until it is moved aside", t.torn.Offset, maxTornLines)})
		return true
	}
	for _, t := range v.pending {
		if t.torn.Bytes > maxTailLine {
			v.problem(Problem{Kind: ProblemTailTooLong, Line: t.n,
				Msg: fmt.Sprintf("offset %d: a line of %d bytes at the end is longer than %d bytes; no writer appends to the log until it is moved aside", t.torn.Offset, t.torn.Bytes, maxTailLine)})
			return true
		}
	}
	return false
}

func (v *verifier) checkHead(headPath string) {
	r := v.headRead
	if r == nil {
		h, ok, err := ReadHead(headPath)
		r = &headRead{h: h, ok: ok, err: err}
	}
	h, ok, err := r.h, r.ok, r.err
	if ok && err == nil {
		v.head = &h
	}
	last := v.rep.Last
	var torn *TornHeadError
	switch {
	case errors.As(err, &torn):
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemHeadTorn, Path: headPath, Msg: err.Error()})
	case err != nil:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemHeadMismatch, Path: headPath, Msg: err.Error()})
	case !ok:
		if last.Seq > 0 {
			v.rep.Problems = append(v.rep.Problems, Problem{Kind: ProblemHeadMissing, Path: headPath,
				Msg: "head file missing: truncation of the log cannot be detected"})
		}
	case h.Seq > last.Seq:
		v.problem(Problem{Kind: ProblemTruncated, Line: v.rep.Lines + 1,
			Msg:      fmt.Sprintf("log ends at seq %d but %s records seq %d: tail truncated", last.Seq, headPath, h.Seq),
			Expected: h.Hash, Found: last.Hash})
	case h.Hash != v.hashOf(h.Seq):
		v.problem(Problem{Kind: ProblemHeadMismatch, Seq: h.Seq,
			Msg:      fmt.Sprintf("hash does not match the one %s records", headPath),
			Expected: h.Hash, Found: v.hashOf(h.Seq)})
	case h.Seq < last.Seq:
		// The records past the head chain from it (any break is its own
		// finding): the head lags, as a writer that stopped before its
		// head update leaves it, or one whose last head rewrites never
		// reached the disk (Options.LazyHead, a machine that stopped).
		// Nothing is missing; what the head file cannot vouch for is
		// named.
		behind := "one record behind"
		if n := last.Seq - h.Seq; n > 1 {
			behind = fmt.Sprintf("%d records behind", n)
		}
		since := ""
		if !v.after.IsZero() {
			since = ", written since " + v.after.UTC().Format(time.RFC3339Nano)
		}
		v.warn(Problem{Kind: WarnHeadBehind, Seq: last.Seq,
			Msg: fmt.Sprintf("%s records seq %d, %s: seq %d to %d%s chain from it. The writer stopped before its head named them, or a machine that stopped lost the head's last rewrites (a host makes them durable at least once a second); a cut of those records would not show in the head file. The next Open rewrites it",
				headPath, h.Seq, behind, h.Seq+1, last.Seq, since)})
	}
}

// hashOf returns the hash of the record with the given seq: the last
// record's for its seq, else the first one's; "none" if there is none.
func (v *verifier) hashOf(seq int64) string {
	if v.last != nil && v.last.Seq == seq {
		return v.last.Hash
	}
	if h, ok := v.bySeq.hash(seq); ok {
		return h
	}
	return "none"
}

// readLock takes a shared lock on the log's lock file if it exists, and
// returns the function that releases it.
func readLock(logPath string) func() {
	f, err := safefile.OpenNoFollow(lockPath(logPath))
	if err != nil {
		return func() {}
	}
	if lockFile(f, false, DefaultLockTimeout) != nil {
		f.Close()
		return func() {}
	}
	return func() {
		unlockFile(f)
		f.Close()
	}
}

// seqHashes keeps the hash of the first record of each seq: in a list
// while seqs come one after another from 1, as they do in a log nobody
// edited, and in a map for the others.
type seqHashes struct {
	inOrder []string // the hash of seq i+1
	others  map[int64]string
}

func (s *seqHashes) note(seq int64, hash string) {
	if _, dup := s.hash(seq); dup {
		return
	}
	if seq != int64(len(s.inOrder))+1 {
		if s.others == nil {
			s.others = make(map[int64]string)
		}
		s.others[seq] = hash
		return
	}
	s.inOrder = append(s.inOrder, hash)
}

func (s *seqHashes) hash(seq int64) (string, bool) {
	if seq >= 1 && seq <= int64(len(s.inOrder)) {
		return s.inOrder[seq-1], true
	}
	h, ok := s.others[seq]
	return h, ok
}

// Verify's findings: the kinds of problem, one finding, the report.

// ProblemKind classifies a Problem.
type ProblemKind string

// Problems: any of these makes Report.OK false.
const (
	ProblemMalformed      ProblemKind = "malformed"       // a line is not a record, and no log_recovered record names it
	ProblemEdited         ProblemKind = "edited"          // a record's hash does not match its contents
	ProblemBrokenLink     ProblemKind = "broken-link"     // a record's prev is not the hash of the record before it
	ProblemSeqGap         ProblemKind = "seq-gap"         // seq jumps forward: records are missing (a deleted line)
	ProblemSeqOrder       ProblemKind = "seq-order"       // seq does not increase: records reordered or duplicated
	ProblemBadRecovery    ProblemKind = "bad-recovery"    // a log_recovered record does not name the torn lines before it
	ProblemTruncated      ProblemKind = "truncated"       // the head names a record past the end of the log
	ProblemHeadMismatch   ProblemKind = "head-mismatch"   // the head names a record the log does not have, or is malformed
	ProblemHeadMissing    ProblemKind = "head-missing"    // the log has records but there is no head file
	ProblemHeadTorn       ProblemKind = "head-torn"       // the head file was torn by a crash during its rewrite
	ProblemLogMissing     ProblemKind = "log-missing"     // there is a head file but no log: the whole log was deleted
	ProblemTailTooLong    ProblemKind = "tail-too-long"   // the lines after the last record are longer or more than Open closes: it refuses the log
	ProblemCut            ProblemKind = "cut"             // a log_recovered record names records cut from the log (or the log found shorter) while a writer had it open
	ProblemCopyMismatch   ProblemKind = "copy-mismatch"   // the copy of the head (or a checkpoint) kept outside the project names a record the log does not have: rewritten or cut
	ProblemCopyUnanchored ProblemKind = "copy-unanchored" // the log goes on past the record the copy of its head names, further than a killed writer leaves it or with the head file ahead of the copy: records nothing outside the project vouches for
)

// Warnings: reported in Report.Warnings; the log still verifies.
const (
	WarnTornTail       ProblemKind = "torn-tail"        // lines after the last record are not records: a crash not yet recovered
	WarnTornRecovered  ProblemKind = "torn-recovered"   // a torn line closed by the log_recovered record after it
	WarnMissingNewline ProblemKind = "missing-newline"  // the last record is complete but lacks its newline
	WarnHeadBehind     ProblemKind = "head-behind"      // the head names an earlier record of the chain: the records after it are named, with the time of the first
	WarnHeadWasMissing ProblemKind = "head-was-missing" // a log_recovered record says the head file was missing: a cut before it cannot be detected
	WarnRecordsLost    ProblemKind = "records-lost"     // a records_lost record: the writer could not write some records (disk full, I/O error…)
	WarnCopyMissing    ProblemKind = "copy-missing"     // the log has records and there is no copy of its head outside the project (first use)
	WarnCopyTorn       ProblemKind = "copy-torn"        // the copy of the head was torn by a crash during its rewrite
	WarnCopyBehind     ProblemKind = "copy-behind"      // the copy of the head names a record at most a batch before the last, and the head file is no further: a writer killed before it synced them
	WarnCopyRecovered  ProblemKind = "copy-recovered"   // a log_recovered record says the copy of the head was missing, torn or behind when a writer caught up
	WarnNoOutcome      ProblemKind = "no-outcome"       // in Report.NoOutcome: a tool_called (request_forwarded) record with no tool_result (request_result) or call_aborted after it, its outcome unknown
)

// Problem is one finding of Verify. Its Error method gives the line the
// CLI prints, e.g.
//
//	audit.jsonl:17: seq 17: prev does not match hash of seq 16 (expected sha256:…, found sha256:…)
type Problem struct {
	Kind ProblemKind
	Path string // the log, or the head file for head problems
	Line int    // 1-based line in Path; 0 if the problem is not on one line
	Seq  int64  // seq of the record concerned; 0 if none
	Msg  string
	// Expected and Found, when set, are the value the chain calls for and
	// the value present (hashes, or seqs in decimal).
	Expected, Found string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Path)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Seq > 0 {
		fmt.Fprintf(&b, "seq %d: ", p.Seq)
	}
	b.WriteString(p.Msg)
	if p.Expected != "" || p.Found != "" {
		fmt.Fprintf(&b, " (expected %s, found %s)", p.Expected, p.Found)
	}
	return b.String()
}

// Report is the result of Verify.
type Report struct {
	OK       bool      // no Problems
	Records  int       // lines that are records
	Lines    int       // lines in the log, records or not
	Last     Head      // the last record; {0, GenesisPrev} for a log without records
	Problems []Problem // in file order, then head problems
	Warnings []Problem
	// NoOutcome names, in file order, each call the log says a server got
	// and not how it ended (WarnNoOutcome, verifycalls.go): the chain may
	// be intact, and it is still a warning.
	NoOutcome []Problem
	// With VerifyOptions.CopyDir: CopyPath is the copy of the head
	// compared, CopyAgrees that it names the log's last record, and
	// Checkpoints how many checkpoints kept beside it were compared.
	CopyPath    string
	CopyAgrees  bool
	Checkpoints int
}
