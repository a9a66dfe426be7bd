package audit

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func timelineRecords(t *testing.T) []Record {
	t.Helper()
	recs, err := Read("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	t0 := recs[2].Time
	next := Record{V: 1, Seq: 4, Time: t0.Add(time.Second), Type: TypeServerReplaced,
		Epoch: "01JQ9A0B1C2D3E4F5G6H7J8K9M", Fields: map[string]any{
			FieldEntry:     "sha256:77aa0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7",
			FieldPrevEpoch: goldenEpoch,
		}}
	call := Record{V: 1, Seq: 5, Time: t0.Add(2 * time.Second), Type: TypeToolCalled,
		Epoch: "01JQ9A0B1C2D3E4F5G6H7J8K9M", Run: "run-2", Fields: map[string]any{FieldTool: "write file"}}
	return append(recs, next, call)
}

func TestFormatTimeline(t *testing.T) {
	var b strings.Builder
	if err := FormatTimeline(&b, timelineRecords(t)); err != nil {
		t.Fatal(err)
	}
	want := `── epoch 01JQ8Z5K2M7N4P6Q8R0S2T4V6W (entry sha256:9e4c0a1b2c3d…) ──
2025-03-01T10:00:00.000Z      1  server_started        epoch=01JQ8Z5K2M7N…  run=-              command="node dist/server.js" entry=sha256:9e4c0a1b2c3d… pid=4242
2025-03-01T10:00:01.250Z      2  tool_called           epoch=01JQ8Z5K2M7N…  run=run-1          tool=read_file     args_digest=sha256:ea86f6b6eecb… scopes=["fs.read"]
2025-03-01T10:00:01.300Z      3  tool_result           epoch=01JQ8Z5K2M7N…  run=run-1          tool=read_file     bytes=18446744073709551615 is_error=false note="café <ok> ✓"
── epoch 01JQ9A0B1C2D3E4F5G6H7J8K9M (entry sha256:77aa0a1b2c3d…) replaces 01JQ8Z5K2M7N… ──
2025-03-01T10:00:02.300Z      4  server_replaced       epoch=01JQ9A0B1C2D…  run=-              entry=sha256:77aa0a1b2c3d… prev_epoch=01JQ8Z5K2M7N4P6Q8R0S2T4V6W
2025-03-01T10:00:03.300Z      5  tool_called           epoch=01JQ9A0B1C2D…  run=run-2          tool="write file"
`
	if got := b.String(); got != want {
		t.Errorf("timeline\n got:\n%s\nwant:\n%s", got, want)
	}

	// Filtered to tool calls, each epoch change still gets a line.
	b.Reset()
	if err := FormatTimeline(&b, Select(timelineRecords(t), Filter{Type: TypeToolCalled})); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Count(got, "── epoch ") != 2 || !strings.HasPrefix(got, "── epoch 01JQ8Z5K2M7N4P6Q8R0S2T4V6W ──\n") {
		t.Errorf("filtered timeline:\n%s", got)
	}
}

func TestFilter(t *testing.T) {
	recs := timelineRecords(t)
	seqs := func(f Filter) string {
		var s []string
		for _, r := range Select(recs, f) {
			s = append(s, r.Time.Format("05.000")+"/"+r.Type)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "00.000/server_started 01.250/tool_called 01.300/tool_result 02.300/server_replaced 03.300/tool_called"},
		{Filter{Type: TypeToolCalled}, "01.250/tool_called 03.300/tool_called"},
		{Filter{Type: "tool"}, ""},
		{Filter{Epoch: "01JQ8Z"}, "00.000/server_started 01.250/tool_called 01.300/tool_result"},
		{Filter{Epoch: "01JQ9A0B1C2D3E4F5G6H7J8K9M", Type: TypeToolCalled}, "03.300/tool_called"},
		{Filter{Run: "run-1"}, "01.250/tool_called 01.300/tool_result"},
		{Filter{Run: "run-"}, "01.250/tool_called 01.300/tool_result 03.300/tool_called"},
		{Filter{Run: "run-1", Epoch: "01JQ9"}, ""},
	} {
		if got := seqs(tc.f); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestTimelineColumnsAlign: epoch, run, tool and outcome start at the same
// column on every line, whatever the type's length, whether the record has
// an epoch or a run, and however long the tool names and outcomes are (up
// to timelineCell); what follows a tool starts at one column too.
func TestTimelineColumnsAlign(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	ep, run := "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", "01JQ8Z4A1B2C3D4E5F6G7H8J9K"
	long := "inventory_adjust_stock_levels_v2" // 32 characters
	recs := []Record{
		{Seq: 1, Time: t0, Type: TypeBuildRecorded, Fields: map[string]any{"build": "01JQ9", "status": "ok"}},
		{Seq: 2, Time: t0, Type: TypePolicyAccepted, Run: run, Fields: map[string]any{"file": "mcpepoch.toml"}},
		{Seq: 3, Time: t0, Type: TypeToolCalled, Epoch: ep, Run: run, Fields: map[string]any{FieldTool: "add", "args_digest": "x"}},
		{Seq: 4, Time: t0, Type: TypeAuthorizationDenied, Epoch: ep, Run: "r1", Fields: map[string]any{FieldTool: long, "reason": "authorization_required"}},
		{Seq: 5, Time: t0, Type: TypeToolResult, Epoch: ep, Run: run, Fields: map[string]any{FieldTool: long, "outcome": "error: the server closed", "bytes": 1}},
		{Seq: 6, Time: t0, Type: TypeToolResult, Epoch: ep, Run: run, Fields: map[string]any{FieldTool: "add", "outcome": "result", "bytes": 2}},
	}
	var b strings.Builder
	if err := FormatTimeline(&b, recs); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "──") {
			lines = append(lines, l)
		}
	}
	col := func(l, s string) int {
		i := strings.Index(l, s)
		if i < 0 {
			return -1
		}
		return utf8.RuneCountInString(l[:i])
	}
	same := func(what string, of func(l string) int, want int) {
		t.Helper()
		for _, l := range lines {
			if c := of(l); c != want {
				t.Errorf("%s at column %d, want %d:\n%s", what, c, want, b.String())
				return
			}
		}
	}
	for _, f := range []string{"  epoch=", "  run="} {
		same(f, func(l string) int { return col(l, f) }, col(lines[0], f))
	}
	// The columns after the run: tool (as wide as tool=<long>), outcome (as
	// wide as the error's), then the other fields; the lines without a
	// tool or an outcome list their fields right after the run.
	runEnd := col(lines[0], "  run=") + len("  run=") + 13
	toolAt := runEnd + 2
	outcomeAt := toolAt + len("tool="+long) + 2
	restAt := outcomeAt + len(`outcome="error: the server closed"`) + 2
	for i, l := range lines {
		if strings.Contains(l, "tool=") {
			if c := col(l, "tool="); c != toolAt {
				t.Errorf("line %d: tool at column %d, want %d:\n%s", i+1, c, toolAt, b.String())
			}
		}
		if strings.Contains(l, "outcome=") {
			if c := col(l, "outcome="); c != outcomeAt {
				t.Errorf("line %d: outcome at column %d, want %d:\n%s", i+1, c, outcomeAt, b.String())
			}
		}
	}
	rest := []string{"build=", "file=", "args_digest=", "reason=", "bytes=", "bytes="}
	for i, f := range rest {
		want := restAt
		if i < 2 {
			want = runEnd + 2
		}
		if c := col(lines[i], f); c != want {
			t.Errorf("line %d: %s at column %d, want %d:\n%s", i+1, f, c, want, b.String())
		}
	}
}
