package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// validSeeds are lines at the edges of JSON's grammar, where a reader
// that validates by hand may differ from encoding/json.
var validSeeds = []string{
	`{}`, ` { } `, "{\t\n\r}", `{"a":1}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":}`, `{"a":1 "b":2}`, `{"a":1}x`, `{"a":1}}`,
	`{"a":-}`, `{"a":-0}`, `{"a":01}`, `{"a":1.}`, `{"a":1.5}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1E-07}`,
	`{"a":0.0e-0}`, `{"a":-01}`, `{"a":+1}`, `{"a":1.5e3.2}`, `{"a":2e308}`,
	`{"a":true}`, `{"a":tru}`, `{"a":truee}`, `{"a":false}`, `{"a":null}`, `{"a":nul}`, `{"a":NaN}`,
	`{"a":"\u00e9"}`, `{"a":"\u00zz"}`, `{"a":"\u00e"}`, `{"a":"\q"}`, `{"a":"\/\b\f\n\r\t\"\\"}`, `{"a":"\`,
	"{\"a\":\"\x01\"}", "{\"a\":\"\x7f\"}", "{\"a\":\"\xff\xfe\"}", "{\"\x00\":1}", `{"a":"x`, `{"a`,
	`{"a":[]}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[1,[2,{"b":[]}]]}`, `{"a":{"b":{}}}`, `{"a":[}`,
	`{"a":{]}`, `{"a":{"b"}}`, `{"a":{"b":1,}}`, `{"a":[1]]}`, `{"a":{"b":1}}}`, `{"a":[{}, {} ,{ }]}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`[1]`, `"a"`, `1`, ``, ` `, `{"a":1}` + "\n",
}

// deep returns a line whose params nest n levels of arrays (the line's
// own object is one more), closed or not.
func deep(n int, closed bool) string {
	s := `{"id":1,"params":` + strings.Repeat("[", n)
	if closed {
		s += strings.Repeat("]", n) + "}"
	}
	return s
}

// validObject accepts exactly the objects json.Valid accepts, nesting
// limit included, and hands over the members eachMember reads.
func TestValidObjectMatchesEncodingJSON(t *testing.T) {
	cases := append([]string{}, validSeeds...)
	cases = append(cases, deep(MaxDepth-1, true), deep(MaxDepth, true), deep(MaxDepth-1, false),
		`{"a":`+strings.Repeat(`{"b":`, MaxDepth-1)+"1"+strings.Repeat("}", MaxDepth)+`}`,
		`{"a":`+strings.Repeat(`{"b":`, MaxDepth-2)+"1"+strings.Repeat("}", MaxDepth-1)+`}`)
	for _, c := range cases {
		checkValidObject(t, []byte(c))
	}
}

func FuzzValidObject(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValidObject(t, b) })
}

func checkValidObject(t *testing.T, b []byte) {
	t.Helper()
	var got []string
	ok := validObject(b, func(k, v []byte) { got = append(got, fmt.Sprintf("%s=%s", k, v)) })
	want := json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
	if ok != want {
		t.Fatalf("validObject(%.200q) = %v, json.Valid says %v", b, ok, want)
	}
	if !ok {
		return
	}
	var members []string
	if err := wholeObject(b, func(k, v []byte) { members = append(members, fmt.Sprintf("%s=%s", k, v)) }); err != nil {
		t.Fatalf("eachMember(%.200q): %v", b, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(members) {
		t.Fatalf("validObject(%.200q) members %.300q, eachMember %.300q", b, got, members)
	}
}

// ValidUTF8 reads invalid bytes as encoding/json does: each one U+FFFD.
func TestValidUTF8(t *testing.T) {
	for _, in := range []string{`{"a":"ok"}`, "{\"a\":\"x\xff\xfey\"}", "{\"a\":\"\xe2\x82\"}", "{\"a\":\"é\xc0\"}"} {
		var want struct{ A string }
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got := ValidUTF8([]byte(in))
		if !utf8.Valid(got) || !json.Valid(got) {
			t.Errorf("ValidUTF8(%q) = %q: not valid UTF-8 JSON", in, got)
		}
		var read struct{ A string }
		json.Unmarshal(got, &read)
		if read.A != want.A {
			t.Errorf("ValidUTF8(%q) reads %q, encoding/json reads the input as %q", in, read.A, want.A)
		}
	}
	ok := []byte(`{"a":"ok"}`)
	if got := ValidUTF8(ok); &got[0] != &ok[0] {
		t.Error("a valid line was copied")
	}
}

// BenchmarkValidUTF8 is the cost every server line pays: a 1 MiB answer
// that is valid UTF-8.
func BenchmarkValidUTF8(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("xé", 1<<19/3) + `"}]}}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		ValidUTF8(line)
	}
}
