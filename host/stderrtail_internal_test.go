package host

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStderrTailKeepsTheLastLines: the tail keeps the last tailLines
// lines, whole lines built from chunks, a long line cut on a rune with
// "…", and an unfinished last line.
func TestStderrTailKeepsTheLastLines(t *testing.T) {
	var tl stderrTail
	for i := range 20 {
		tl.Write([]byte(strings.Repeat("x", i) + "\n"))
	}
	tl.Write([]byte("Syntax"))
	tl.Write([]byte("Error: at line 3\r\na" + strings.Repeat("é", 300) + "\n"))
	tl.Write([]byte("unfinished"))
	got := tl.Lines()
	if len(got) != tailLines {
		t.Fatalf("%d lines, want %d: %q", len(got), tailLines, got)
	}
	if got[len(got)-3] != "SyntaxError: at line 3" || got[len(got)-1] != "unfinished" {
		t.Errorf("last lines %q, want the line written in two chunks, the long one, the unfinished one", got[len(got)-3:])
	}
	long := got[len(got)-2]
	if !strings.HasSuffix(long, "…") || len(long) > tailLineMax+len("…") || !utf8.ValidString(long) {
		t.Errorf("long line kept as %d bytes %q, want at most %d, valid UTF-8, ending in …", len(long), long, tailLineMax)
	}
	if got[0] != strings.Repeat("x", 11) {
		t.Errorf("oldest kept line %q, want the 12th-last", got[0])
	}
}
