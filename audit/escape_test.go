package audit

import (
	"strings"
	"testing"
	"time"
)

// TestTimelineEscapes: what a server named (tool names, fields) reaches
// the terminal escaped, never raw.
func TestTimelineEscapes(t *testing.T) {
	recs := []Record{
		{V: 1, Seq: 1, Time: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), Type: "tool_called\x1b[2J",
			Epoch: "01JQ\u202eEPOCH", Run: "r\u009b1\xff", Fields: map[string]any{
				FieldTool:      "wipe_disk\r\x1b[Kread_file",
				"scopes":       []any{"fs\u202e.read", "a\x7fb"},
				"name\x1b]0;x": "v",
			}},
		{V: 1, Seq: 2, Time: time.Date(2025, 3, 1, 10, 0, 1, 0, time.UTC), Type: TypeServerReplaced,
			Epoch: "E2\x1b[31m", Fields: map[string]any{FieldEntry: "sha256:\u2066x", FieldPrevEpoch: "P\x1b"}},
	}
	var b strings.Builder
	if err := FormatTimeline(&b, recs); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, c := range []string{"\x1b", "\r", "\u009b", "\xff", "\x7f", "\u202e", "\u2066"} {
		if strings.Contains(got, c) {
			t.Errorf("timeline holds raw %q:\n%s", c, got)
		}
	}
	for _, want := range []string{
		`tool_called\x1b[2J`, `epoch=01JQ\u202eEPOCH`, `run=r\u009b1\xff`,
		`tool="wipe_disk\r\x1b[Kread_file"`, `scopes=["fs\u202e.read","a\x7fb"]`, `name\x1b]0;x=v`,
		`── epoch E2\x1b[31m (entry sha256:\u2066x) replaces P\x1b ──`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %s:\n%s", want, got)
		}
	}
}
