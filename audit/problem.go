// Verify's findings: the kinds of problem, one finding, the report.

package audit

import (
	"errors"
	"fmt"
	"strings"
)

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
	WarnHeadBehind     ProblemKind = "head-behind"      // the head names the record before the last
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

// Err returns nil if r.OK, else the Problems joined with errors.Join, one
// per line.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	errs := make([]error, len(r.Problems))
	for i, p := range r.Problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}
