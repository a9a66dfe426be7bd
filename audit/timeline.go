package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpepoch/mcpepoch/internal/termsafe"
)

// FormatTimeline writes recs to w as a timeline, one line per record, in
// columns:
//
//	2025-03-01T10:00:01.250Z      2  tool_called           epoch=01JQ8Z5K2M7N…  run=r1             tool=read_file  args_digest=sha256:1a2b3c4d5e6f…
//	2025-03-01T10:00:01.300Z      3  tool_result           epoch=01JQ8Z5K2M7N…  run=r1             tool=read_file  bytes=18 is_error=false
//	2025-03-01T10:00:02.000Z      4  build_recorded        epoch=-              run=-              build=01JQ9A0B1C2D3E4F5G6H7J8K9M status=ok
//
// time in UTC to the millisecond, seq, type (as wide as the widest record
// type), epoch and run (shortened to 12 characters, "-" when the record has
// none), then, on the lines of records with a tool or an outcome, those
// two, each as wide as the widest among recs (up to timelineCell: a longer
// one pushes only its own line on), then the other fields sorted by name;
// digests shortened to 12 hex digits. A record of type server_started or server_replaced is
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
	cols := timelineColumns(recs)
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
		ew.printf("%s\n", strings.TrimRight(cols.line(r), " "))
	}
	return ew.err
}

// timelineCell is the widest a tool or outcome column grows to fit.
const timelineCell = 40

// leadFields are the fields given a column of their own, in this order,
// before the others.
var leadFields = []string{FieldTool, "outcome"}

// columns are the widths of a timeline's columns: the type's, and each
// lead field's ("name=value"; 0 when no record has it).
type columns struct {
	typ  int
	lead []int
}

// timelineColumns measures recs.
func timelineColumns(recs []Record) columns {
	c := columns{lead: make([]int, len(leadFields))}
	for _, t := range Types() {
		c.typ = max(c.typ, utf8.RuneCountInString(t))
	}
	for _, r := range recs {
		c.typ = max(c.typ, utf8.RuneCountInString(printable(r.Type)))
		for i, k := range leadFields {
			if v, ok := r.Fields[k]; ok {
				c.lead[i] = max(c.lead[i], min(timelineCell, utf8.RuneCountInString(k+"="+value(v))))
			}
		}
	}
	return c
}

// line is r's line, without the separator before it.
func (c columns) line(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %5d  %s  %s  %s", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Seq,
		pad(printable(r.Type), c.typ), pad("epoch="+printable(orDash(short(r.Epoch))), len("epoch=")+13),
		pad("run="+printable(orDash(short(r.Run))), len("run=")+13))
	hasLead := slices.ContainsFunc(leadFields, func(k string) bool { _, ok := r.Fields[k]; return ok })
	for i, k := range leadFields {
		if c.lead[i] == 0 || !hasLead {
			continue // a record with neither lists its fields at once
		}
		cell := ""
		if v, ok := r.Fields[k]; ok {
			cell = printable(k) + "=" + value(v)
		}
		b.WriteString("  " + pad(cell, c.lead[i]))
	}
	names := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		if !slices.Contains(leadFields, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	sep := "  "
	for _, k := range names {
		fmt.Fprintf(&b, "%s%s=%s", sep, printable(k), value(r.Fields[k]))
		sep = " "
	}
	return b.String()
}

// pad is s followed by spaces up to width runes.
func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
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
