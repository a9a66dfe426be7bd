package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/termsafe"
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

// FormatTimeline writes recs to w as a timeline, one line per record:
//
//	2025-03-01T10:00:01.250Z      2  tool_called           epoch=01JQ8Z5K2M7N… run=r1 args_digest=sha256:1a2b3c4d5e6f… tool=read_file
//
// (time in UTC to the millisecond, seq, type, then epoch, run and the other
// fields sorted by name; digests shortened to 12 hex digits, epochs and runs
// to 12 characters). A record of type server_started or server_replaced is
// preceded by a separator line naming the epoch it starts, its entry digest
// and, for server_replaced, the epoch it ends:
//
//	── epoch 01JQ8Z5K2M7N4P6Q8R0S2T4V6W (entry sha256:9e4c0a1b2c3d…) replaces 01JQ7X… ──
//
// and a record whose epoch differs from the one before it, without such a
// record, by a plain "── epoch … ──" line. Nothing of a record reaches w
// raw: control characters (C0, DEL, C1), Unicode format characters such as
// U+202E and other characters a terminal would not show as themselves are
// escaped as strconv.Quote escapes them, in string values (which are then
// quoted) and in types, epochs, runs, field names and other values alike.
// It returns the first write error.
func FormatTimeline(w io.Writer, recs []Record) error {
	ew := &errWriter{w: w}
	epoch := ""
	for _, r := range recs {
		switch {
		case r.Type == TypeServerStarted || r.Type == TypeServerReplaced:
			var b strings.Builder
			fmt.Fprintf(&b, "── epoch %s", printable(orDash(r.Epoch)))
			if e, ok := r.Fields[FieldEntry].(string); ok {
				fmt.Fprintf(&b, " (entry %s)", printable(shortDigest(e)))
			}
			if p, ok := r.Fields[FieldPrevEpoch].(string); ok && r.Type == TypeServerReplaced {
				fmt.Fprintf(&b, " replaces %s", printable(short(p)))
			}
			b.WriteString(" ──")
			ew.printf("%s\n", b.String())
			epoch = r.Epoch
		case r.Epoch != "" && r.Epoch != epoch:
			ew.printf("── epoch %s ──\n", printable(r.Epoch))
			epoch = r.Epoch
		}
		ew.printf("%s  %5d  %-20s%s\n", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Seq, printable(r.Type), details(r))
	}
	return ew.err
}

// details returns " epoch=… run=… name=value…" for r.
func details(r Record) string {
	var b strings.Builder
	if r.Epoch != "" {
		fmt.Fprintf(&b, "  epoch=%s", printable(short(r.Epoch)))
	}
	if r.Run != "" {
		fmt.Fprintf(&b, " run=%s", printable(short(r.Run)))
	}
	names := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%s", printable(k), value(r.Fields[k]))
	}
	return b.String()
}

// value formats a field value for the timeline.
func value(v any) string {
	s, ok := v.(string)
	if !ok {
		// JSON escapes C0 controls only: DEL, C1 and U+202E pass through.
		b, err := json.Marshal(v)
		if err != nil {
			return printable(fmt.Sprint(v))
		}
		return printable(string(b))
	}
	s = shortDigest(s)
	if s == "" || strings.IndexFunc(s, func(c rune) bool { return c == '=' || unicode.IsSpace(c) || !unicode.IsPrint(c) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// printable escapes what a host wrote into the log before it reaches a
// terminal (termsafe.EscapeText: backslashes kept, as values are already
// quoted).
func printable(s string) string { return termsafe.EscapeText(s) }

// shortDigest shortens "sha256:<64 hex>" to 12 hex digits and "…"; other
// strings are returned unchanged.
func shortDigest(s string) string {
	if h, ok := strings.CutPrefix(s, "sha256:"); ok && len(h) == 64 {
		return "sha256:" + h[:12] + "…"
	}
	return s
}

// short shortens s to 12 characters and "…".
func short(s string) string {
	if r := []rune(s); len(r) > 13 {
		return string(r[:12]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
