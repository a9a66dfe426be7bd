package audit

import (
	"bytes"
	"testing"

	"github.com/gowebpki/jcs"
)

var canonArgsSeeds = []string{
	`{"path":"README.md","limit":10}`,
	` { "b" : [1, -2, 0, true, false, null, "x"] ,"a":{"z":{},"y":[]}} `,
	`{"é":1,"e":2,"😀":3,"\uE000":4,"":5}`,
	"{\"\ue000\":1,\"\U0001F600\":2}",
	`{"a":1,"a":2}`,
	`{"b":1,"a":2,"b":3}`,
	`{"n":1.5}`, `{"n":1e3}`, `{"n":-0}`, `{"n":0}`, `{"n":-7}`, `{"n":01}`,
	`{"n":123456789012345}`, `{"n":1234567890123456}`, `{"n":9007199254740993}`,
	`{"s":"a\nb"}`, `{"s":"a\u0041"}`, `{"s":"\/"}`, "{\"s\":\"\x7f\"}", "{\"s\":\"\xff\"}", "{\"s\":\"\xed\xa0\x80\"}",
	"{\"s\":\"\ufffd\"}", "{\"s\":\"a\x01\"}",
	`[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`, `{"a":true"b"}`, `{"a":truex}`, `[1 2]`,
	`"top"`, `42`, `null`, `[]`, `{}`, `[[[[[[[[[[]]]]]]]]]]`,
	`{"a":[{"d":1,"c":2},{"b":{"y":1,"x":2}}],"0":0}`,
	"{\"a\":1}\x00", "\xef\xbb\xbf{}", `{"a":1}}`, `{"a":1`, `{"k":"v"` + "\u00a0" + `}`,
}

// FuzzCanonicalFastMatchesJCS: wherever canonicalFast does not give up,
// its output is jcs.Transform's byte for byte, and jcs.Transform accepts
// the input.
func FuzzCanonicalFastMatchesJCS(f *testing.F) {
	for _, s := range canonArgsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := canonicalFast(in)
		if !ok {
			return
		}
		want, err := jcs.Transform(in)
		if err != nil {
			t.Fatalf("canonicalFast took %q, which jcs.Transform refuses: %v", in, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonicalFast(%q)\n got %s\nwant %s", in, got, want)
		}
	})
}

// TestCanonicalFastTakes: the arguments calls usually carry take the fast
// path (with their members sorted and whitespace gone); numbers whose
// ES6 form differs from their text, escapes and duplicate keys do not.
func TestCanonicalFastTakes(t *testing.T) {
	for in, want := range map[string]string{
		`{"path":"README.md","limit":10}`:                           `{"limit":10,"path":"README.md"}`,
		` { "b" : [1, -2, true, null] , "a" : { "y":[],"x":{} } } `: `{"a":{"x":{},"y":[]},"b":[1,-2,true,null]}`,
		"{\"\U0001F600\":1,\"\ue000\":2}":                           "{\"\U0001F600\":1,\"\ue000\":2}",
		`[{"d":1,"c":2},{"b":{"y":1,"x":2}}]`:                       `[{"c":2,"d":1},{"b":{"x":2,"y":1}}]`,
	} {
		got, ok := canonicalFast([]byte(in))
		if !ok || string(got) != want {
			t.Errorf("canonicalFast(%s) = %s, %v; want %s", in, got, ok, want)
		}
		if ref, err := jcs.Transform([]byte(in)); err != nil || string(ref) != want {
			t.Errorf("jcs.Transform(%s) = %s, %v; want %s", in, ref, err, want)
		}
	}
	for _, in := range []string{`{"n":1.5}`, `{"n":1e3}`, `{"n":-0}`, `{"n":1234567890123456}`,
		`{"s":"a\u0041"}`, `{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, "{\"s\":\"\xff\"}", `{"a":1,}`} {
		if got, ok := canonicalFast([]byte(in)); ok {
			t.Errorf("canonicalFast(%s) = %s, want it to give up", in, got)
		}
	}
}

// TestArgsDigestUnchanged: the digest of arguments is the one of their
// jcs.Transform form, through either path.
func TestArgsDigestUnchanged(t *testing.T) {
	for _, s := range canonArgsSeeds {
		want := []byte(s)
		if c, err := jcs.Transform(bytes.TrimSpace(want)); err == nil {
			want = c
		} else {
			want = bytes.TrimSpace(want)
		}
		if got := canonicalArgs([]byte(s)); !bytes.Equal(got, want) {
			t.Errorf("canonicalArgs(%q) = %q, want %q", s, got, want)
		}
	}
}

// BenchmarkCanonicalArgs compares the fast path with jcs.Transform on a
// small tool call's arguments.
func BenchmarkCanonicalArgs(b *testing.B) {
	in := []byte(`{"path":"src/main.go","limit":10,"recursive":false,"pattern":"func [A-Z]"}`)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := canonicalFast(in); !ok {
				b.Fatal("gave up")
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		for b.Loop() {
			if _, err := jcs.Transform(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
