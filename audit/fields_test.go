package audit

import (
	"strings"
	"testing"
	"time"
)

// An event's fields given as Attrs make the same record, byte for byte
// and hash for hash, as the same fields in Fields, in whatever mix; a name
// given twice, or reserved, is refused.
func TestAttrsSealAsFields(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 1, 250, time.UTC)
	fields := map[string]any{"tool": "echo", "args_digest": "hmac-sha256:00", "is_error": false, "n": 3}
	want, err := seal(GenesisPrev, 7, at, Event{Type: TypeToolCalled, Epoch: "e", Run: "r", Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	attrs := []Attr{{"n", 3}, {"is_error", false}, {"tool", "echo"}}
	got, err := seal(GenesisPrev, 7, at, Event{Type: TypeToolCalled, Epoch: "e", Run: "r",
		Fields: map[string]any{"args_digest": "hmac-sha256:00"}, Attrs: attrs})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("with Attrs:\n%s\nwith Fields:\n%s", got, want)
	}
	for _, ev := range []Event{
		{Type: TypeToolCalled, Attrs: []Attr{{"tool", "a"}, {"tool", "b"}}},
		{Type: TypeToolCalled, Fields: map[string]any{"tool": "a"}, Attrs: []Attr{{"tool", "b"}}},
		{Type: TypeToolCalled, Attrs: []Attr{{"seq", 1}}},
		{Type: TypeToolCalled, Attrs: []Attr{{"", 1}}},
		{Type: TypeToolCalled, Attrs: []Attr{{"a\xff", 1}, {"a\xfe", 2}}},
	} {
		if line, err := seal(GenesisPrev, 1, at, ev); err == nil {
			t.Errorf("%v: sealed as %s", ev.Attrs, strings.TrimSpace(string(line)))
		}
	}
}
