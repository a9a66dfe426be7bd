package jsonrpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A member named twice anywhere in tools/call arguments is refused
// -32602, naming it: the host validates the last value, a server that
// keeps the first would run the other.
func TestParseClientDuplicateArgument(t *testing.T) {
	many := `{`
	for i := range 40 {
		many += fmt.Sprintf(`"k%d":%d,`, i, i)
	}
	for _, tc := range []struct{ args, dup string }{
		{`{"mode":"evil","mode":"safe"}`, "mode"},
		{`{"mode":"safe","n":99,"n":1}`, "n"},
		{`{"a":{"b":[{"c":1,"d":2,"c":3}]}}`, "c"},
		{`[{"x":1},{"y":{"z":1,"z":1}}]`, "z"},
		{`{"m\u006fde":"evil","mode":"safe"}`, "mode"}, // escaped: the same name
		{"{\"a\xff\":1,\"a\xfe\":2}", "a\ufffd"},       // both read as a U+FFFD
		{many + `"k3":0}`, "k3"},                       // past the set threshold
		{many + `"x":{"k3":1,"k3":2}}`, "k3"},          // nested below a large object
	} {
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pick","arguments":` + tc.args + `}}`
		m, err := ParseClient([]byte(line))
		pe, ok := err.(*ProtocolError)
		if !ok || pe.Code != CodeInvalidParams || !strings.Contains(pe.Msg, fmt.Sprintf("%q", tc.dup)) || m == nil || string(m.ID) != "1" {
			t.Errorf("%s: got %v (%T), want -32602 naming %q under id 1", tc.args, err, err, tc.dup)
		}
	}
	for _, args := range []string{
		`{"mode":"safe","Mode":"evil"}`, // another name: JSON Schema matches names exactly
		`{"a":{"k":1},"b":{"k":2},"k":3}`,
		`{"a":[{"k":1},{"k":2}]}`,
		`{"s":"\"k\":1,\"k\":2"}`,
		`["k","k"]`,
		many + `"k40":0}`,
	} {
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pick","arguments":` + args + `}}`
		if _, err := ParseClient([]byte(line)); err != nil {
			t.Errorf("%s: %v, want it accepted", args, err)
		}
	}
	// Other requests' params are forwarded as they are.
	if _, err := ParseClient([]byte(`{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"a":1,"a":2}}`)); err != nil {
		t.Errorf("non-call params: %v", err)
	}
}

// FuzzDuplicateMember: duplicateMember agrees with a reading through
// encoding/json's tokenizer on every valid JSON value.
func FuzzDuplicateMember(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":1},"b":1}`, `[{"x":1,"\u0078":2}]`, `{"s":"\"a\":1","a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		_, got := duplicateMember(b)
		if want := decodedDuplicate(t, b); got != want {
			t.Fatalf("duplicateMember(%q) = %v, encoding/json's tokens say %v", b, got, want)
		}
	})
}

func decodedDuplicate(t *testing.T, b []byte) bool {
	d := json.NewDecoder(strings.NewReader(string(b)))
	type obj struct {
		seen   map[string]bool
		keyNow bool
	}
	var stack []*obj
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.keyNow
		if top != nil && top.seen != nil {
			top.keyNow = !top.keyNow
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &obj{seen: map[string]bool{}, keyNow: true})
			case '[':
				stack = append(stack, &obj{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].seen != nil {
					stack[len(stack)-1].keyNow = true
				}
			}
		case string:
			if isKey {
				if top.seen[v] {
					return true
				}
				top.seen[v] = true
			}
		}
	}
}
