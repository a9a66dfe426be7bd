package audit

import (
	"fmt"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// Read returns the records of the log at logPath in file order, with Line
// set. It does not check hashes or the chain (Verify does). Lines that are
// not records are skipped where a crash explains them (at the end of the
// log, or named by the log_recovered record after them); any other such line
// is an error naming the file and line. Read holds a shared lock on the
// log's lock file, if there is one, while it reads.
func Read(logPath string) ([]Record, error) {
	var recs []Record
	if err := Scan(logPath, ScanOptions{}, func(r Record) { recs = append(recs, r) }); err != nil {
		return nil, err
	}
	return recs, nil
}

// ScanOptions adjusts Scan. The zero value reads every record whole.
type ScanOptions struct {
	// Fields, when not nil, says which records' Fields a caller needs, by
	// type; the others' are nil (the record is read, checked and counted
	// all the same, so what is a record is as for Read). A log_recovered
	// record always has its Fields.
	Fields func(typ string) bool
	// Line, when not nil, is called with every line of the log as it is
	// read (without its newline), record or not, and after a fault as
	// before it: for a caller that looks for something in the lines
	// themselves in the same pass. It must not keep the slice.
	Line func(b []byte)
}

// Scan reads the log at logPath as Read does, and calls fn with each
// record, in file order, as it reads them, instead of returning them all.
// When Scan returns an error, where Read returns no records, fn may have
// seen records before the line at fault: a caller drops what it learnt
// from them.
func Scan(logPath string, opts ScanOptions, fn func(Record)) error {
	release := readLock(logPath)
	defer release()
	f, err := safefile.OpenNoFollow(logPath)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	want := func(typ string) bool { return typ == TypeLogRecovered || opts.Fields(typ) }
	if opts.Fields == nil {
		want = nil
	}
	var (
		lines   lineReader
		pending []tornLine
		bad     error
	)
	err = eachLine(f, func(l rawLine) {
		if opts.Line != nil {
			opts.Line(l.b)
		}
		if bad != nil {
			return
		}
		rec, _, err := lines.parse(l.b, want, false)
		if err != nil {
			pending = append(pending, newTornLine(l, err))
			return
		}
		if len(pending) > 0 {
			if ok, _ := recovers(rec, pending); !ok {
				bad = fmt.Errorf("audit: %s:%d: not a record: %v", logPath, pending[0].n, pending[0].err)
				return
			}
			pending = nil
		}
		rec.Line = l.n
		fn(rec)
	})
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", logPath, err)
	}
	return bad
}

// Filter selects records for mcpepoch audit show. Empty members match
// everything; set members must all match.
type Filter struct {
	Run   string // a prefix of the record's run
	Epoch string // a prefix of the record's epoch
	Type  string // the record's type, exactly
}

// Match reports whether r passes f.
func (f Filter) Match(r Record) bool {
	return (f.Type == "" || r.Type == f.Type) &&
		(f.Epoch == "" || r.Epoch != "" && strings.HasPrefix(r.Epoch, f.Epoch)) &&
		(f.Run == "" || r.Run != "" && strings.HasPrefix(r.Run, f.Run))
}

// Select returns the records of recs that pass f, in order.
func Select(recs []Record, f Filter) []Record {
	var out []Record
	for _, r := range recs {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out
}
