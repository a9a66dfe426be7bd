package jsonc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Strip keeps strings as they are, comment markers, brackets, commas and
// escaped quotes inside them included, while it drops the comments and
// trailing commas outside them; an unclosed string runs to the end.
func TestStrip(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any // nil: not JSON after jsonc
	}{
		{`{"a": "x // y", // comment
 "b": "/* not a comment */", /* comment */ "c": ["]", "},", ],}`,
			map[string]any{"a": "x // y", "b": "/* not a comment */", "c": []any{"]", "},"}}},
		{`{"q": "say \"hi\", // there", "e": "\\", "n": 1,}`,
			map[string]any{"q": `say "hi", // there`, "e": `\`, "n": float64(1)}},
		{`{"outDir": "dist\\" // an escaped backslash closes the string
}`, map[string]any{"outDir": `dist\`}},
		{`{"open": "never closed, }`, nil},
	} {
		var got any
		err := json.Unmarshal(Strip([]byte(c.in)), &got)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("Strip(%q) = %s, want it still broken", c.in, Strip([]byte(c.in)))
		case c.want != nil && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("Strip(%q) = %s (%v), want %v", c.in, Strip([]byte(c.in)), err, c.want)
		}
	}
}
