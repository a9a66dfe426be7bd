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
	release := readLock(logPath)
	defer release()
	f, err := safefile.OpenNoFollow(logPath)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	var (
		recs    []Record
		pending []tornLine
		bad     error
	)
	err = eachLine(f, func(l rawLine) {
		if bad != nil {
			return
		}
		rec, _, err := parseLine(l.b)
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
		recs = append(recs, rec)
	})
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", logPath, err)
	}
	if bad != nil {
		return nil, bad
	}
	return recs, nil
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
