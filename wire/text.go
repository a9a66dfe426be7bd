package wire

import (
	"slices"
	"strings"
)

// text is a file as lines, edited by line number so that everything an
// edit does not touch (comments, order, blank lines) stays as written.
type text struct {
	lines []string // without their newlines
	final bool     // the file ended with a newline
	edits []edit
}

// edit replaces del lines starting at line at (1-based; len+1 is the end
// of the file) with ins.
type edit struct {
	at, del int
	ins     []string
	seq     int
}

func newText(b []byte) *text {
	s := string(b)
	t := &text{final: strings.HasSuffix(s, "\n") || s == ""}
	s = strings.TrimSuffix(s, "\n")
	if s != "" || len(b) > 0 {
		t.lines = strings.Split(s, "\n")
	}
	if len(b) == 0 {
		t.lines = nil
	}
	return t
}

// line returns line n (1-based), "" past either end.
func (t *text) line(n int) string {
	if n < 1 || n > len(t.lines) {
		return ""
	}
	return t.lines[n-1]
}

// insert puts lines before line at. Inserts at the same line keep the
// order they were made in.
func (t *text) insert(at int, lines ...string) { t.replace(at, 0, lines...) }

// replace replaces del lines from at with lines.
func (t *text) replace(at, del int, lines ...string) {
	t.edits = append(t.edits, edit{at: at, del: del, ins: lines, seq: len(t.edits)})
}

func (t *text) changed() bool { return len(t.edits) > 0 }

// bytes applies the edits, last line first, and returns the new content.
func (t *text) bytes() []byte {
	es := slices.Clone(t.edits)
	slices.SortFunc(es, func(a, b edit) int {
		if a.at != b.at {
			return b.at - a.at
		}
		return b.seq - a.seq
	})
	lines := slices.Clone(t.lines)
	for _, e := range es {
		at := min(max(e.at-1, 0), len(lines))
		end := min(at+e.del, len(lines))
		lines = slices.Concat(lines[:at], e.ins, lines[end:])
	}
	out := strings.Join(lines, "\n")
	if len(lines) > 0 && (t.final || len(t.lines) == 0) {
		out += "\n"
	}
	return []byte(out)
}

// indentOf returns the leading spaces and tabs of s.
func indentOf(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// blank reports whether s is empty or a comment only.
func blank(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.HasPrefix(s, "#")
}

// blockEnd returns the last line of the block that starts at line start:
// the lines after it that are blank or indented deeper than indent
// columns, without trailing blank or comment lines.
func (t *text) blockEnd(start, indent int) int {
	end := start
	for n := start + 1; n <= len(t.lines); n++ {
		l := t.line(n)
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(indentOf(l)) <= indent {
			break
		}
		if !blank(l) {
			end = n
		}
	}
	return end
}
