package audit

import (
	"strings"
	"testing"
	"time"
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
2025-03-01T10:00:00.000Z      1  server_started        epoch=01JQ8Z5K2M7N… command="node dist/server.js" entry=sha256:9e4c0a1b2c3d… pid=4242
2025-03-01T10:00:01.250Z      2  tool_called           epoch=01JQ8Z5K2M7N… run=run-1 args_digest=sha256:ea86f6b6eecb… scopes=["fs.read"] tool=read_file
2025-03-01T10:00:01.300Z      3  tool_result           epoch=01JQ8Z5K2M7N… run=run-1 bytes=18446744073709551615 is_error=false note="café <ok> ✓" tool=read_file
── epoch 01JQ9A0B1C2D3E4F5G6H7J8K9M (entry sha256:77aa0a1b2c3d…) replaces 01JQ8Z5K2M7N… ──
2025-03-01T10:00:02.300Z      4  server_replaced       epoch=01JQ9A0B1C2D… entry=sha256:77aa0a1b2c3d… prev_epoch=01JQ8Z5K2M7N4P6Q8R0S2T4V6W
2025-03-01T10:00:03.300Z      5  tool_called           epoch=01JQ9A0B1C2D… run=run-2 tool="write file"
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
