package jsonrpc

import (
	"encoding/json"
	"testing"
)

// TestSetMember: the one member changes and every other byte stays as the
// peer wrote it: member order, spacing, \u escapes and <>& untouched.
func TestSetMember(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		value    string
		path     []string
		want     string
	}{
		{"replace", `{"b":1, "a":{"x":"<&>","listChanged":false}}`, `true`, []string{"a", "listChanged"},
			`{"b":1, "a":{"x":"<&>","listChanged":true}}`},
		{"insert", `{"z":"\u00e9","tools":{"y":1}}`, `true`, []string{"tools", "listChanged"},
			`{"z":"\u00e9","tools":{"listChanged":true,"y":1}}`},
		{"insert into empty", `{"tools": { } }`, `true`, []string{"tools", "listChanged"},
			`{"tools": {"listChanged":true } }`},
		{"missing parents", `{"result":{"protocolVersion":"x"}}`, `true`, []string{"result", "capabilities", "tools", "listChanged"},
			`{"result":{"capabilities":{"tools":{"listChanged":true}},"protocolVersion":"x"}}`},
		{"null parent", `{"tools":null}`, `0`, []string{"tools", "ttlMs"}, `{"tools":{"ttlMs":0}}`},
		{"last of two", `{"id":1,"id":2}`, `"h"`, []string{"id"}, `{"id":1,"id":"h"}`},
		{"trailing newline", "{\"id\":1}\n", `"h"`, []string{"id"}, "{\"id\":\"h\"}\n"},
	} {
		got, err := SetMember([]byte(tc.in), json.RawMessage(tc.value), tc.path...)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: SetMember = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[1]`, `{"tools":[1]}`, `{"tools":`, `"x"`} {
		if out, err := SetMember([]byte(bad), json.RawMessage(`true`), "tools", "listChanged"); err == nil {
			t.Errorf("SetMember(%s) = %s, want an error", bad, out)
		}
	}
	if v, ok := GetMember([]byte(`{"a":{"b":[1, 2]},"a":{"b":3}}`), "a", "b"); !ok || string(v) != "3" {
		t.Errorf("GetMember = %s, %v; want 3", v, ok)
	}
}

// TestLinesKeepHTML: text the host writes keeps <, > and & as they are.
func TestLinesKeepHTML(t *testing.T) {
	got := string(ErrorLine(json.RawMessage("1"), -31005, `unknown_tool: "<a&b>"`, nil))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-31005,"message":"unknown_tool: \"<a&b>\""}}` + "\n"
	if got != want {
		t.Errorf("ErrorLine = %s, want %s", got, want)
	}
}
