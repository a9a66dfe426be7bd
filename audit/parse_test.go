package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// Variants of the golden log's second record: each replaces the first
// string with the second. fastVariants are records in RFC 8785 form,
// which the fast path reads; slowVariants are left to parseLine (not in
// that form, or not records).
var (
	fastVariants = [][2]string{
		{`"run":"run-1"`, `"run":"r\u001fn\n\"\\"`}, {`"scopes":["fs.read"]`, `"scopes":[]`}, {`"scopes":["fs.read"]`, `"scopes":{}`},
		{`"scopes":["fs.read"]`, `"scopes":[1.5,1e+21,1e-7,-12,true,null,{"a":"\u0000","b":[{}]}]`},
		{`"scopes":["fs.read"]`, "\"scopes\":[\"\ue000\"],\"sc\xc3\xa9\":\"\xf0\x9f\x98\x80\""},
		{`"time":"2025-03-01T10:00:01.250000000Z"`, `"time":"2025-03-01T11:00:01.25+01:00"`},
		{`"v":1}`, `"v":1,"w":[[[[[[[[1]]]]]]]]}`}, {`"args_digest":"sha256:ea86f6b6eecb7e471eb5c71dec3a398b2b2091a1207eb66bb94a482a0a538682",`, ``},
	}
	slowVariants = [][2]string{
		{`"seq":2`, `"seq": 2`}, {`"seq":2`, `"seq":2.0`}, {`"seq":2`, `"seq":2e0`}, {`"seq":2`, `"seq":"2"`},
		{`"seq":2`, `"seq":-0`}, {`"seq":2`, `"seq":0`}, {`"v":1`, `"v":2`}, {`"v":1`, `"v":1.5`},
		{`"run":"run-1"`, `"run":null`}, {`"run":"run-1"`, `"run":"run\/1"`}, {`"run":"run-1"`, `"run":"run\u002d1"`},
		{`"run":"run-1"`, `"run":"r\u001Fn"`}, {`"run":"run-1"`, `"run":"r\u000an"`},
		{`"tool":"read_file"`, `"tool":"read_file","tool":"x"`}, {`"tool":"read_file"`, `"tool":"read\u00e9"`},
		{`"scopes":["fs.read"]`, `"scopes":[1.5,1e21]`}, {`"scopes":["fs.read"]`, `"scopes":[{"b":1,"a":2}]`},
		{`"scopes":["fs.read"]`, `"scopes":[12345678901234567890]`}, {`"scopes":["fs.read"]`, `"scopes":[9007199254740993]`}, {`"scopes":["fs.read"]`, `"scopes":[01]`},
		{`"scopes":["fs.read"]`, "\"sc\xc3\xa9\":1,\"scopes\":[]"}, {`"scopes":["fs.read"]`, "\"scopes\":[\"\xff\"]"},
		{`"scopes":["fs.read"]`, `"scopes":[1,]`}, {`"scopes":["fs.read"]`, `"sc\u0000":1`},
		{`"time":"2025-03-01T10:00:01.250000000Z"`, `"time":"yesterday"`}, {`"hash":"sha256:d1`, `"hash":"sha256:D1`},
		{`{"args_digest"`, ` {"args_digest"`}, {`"v":1}`, `"v":1}` + "\r"}, {`,"v":1}`, `}`},
		{`"v":1}`, `"v":1,"w":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`},
	}
)

// readSeeds are lines a lineReader must read as parseLine does: the
// golden log's, the variants, and lines that are no record at all.
func readSeeds(tb testing.TB) []string {
	seeds := goldenLines(tb)
	for _, v := range append(fastVariants, slowVariants...) {
		seeds = append(seeds, strings.Replace(seeds[1], v[0], v[1], 1))
	}
	return append(seeds, "", "{}", "[]", `"x"`, "{\"v\":1,\"seq\":1}\n\x00", strings.Repeat("[", 100)+strings.Repeat("]", 100))
}

// goldenLines returns the golden log's lines.
func goldenLines(tb testing.TB) []string {
	b, err := os.ReadFile(filepath.Join("testdata", "golden.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// sameAsParseLine fails t when p reads line otherwise than parseLine, and
// reports whether the fast path took it.
func sameAsParseLine(t *testing.T, p *lineReader, line []byte) bool {
	t.Helper()
	want, wantSum, wantErr := parseLine(line)
	got, sum, err := p.parse(line, nil, true)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, parseLine's %v", line, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) || sum != wantSum {
		t.Fatalf("%q:\n got %#v %s\nwant %#v %s", line, got, sum, want, wantSum)
	}
	bare, bareSum, _ := p.parse(line, func(string) bool { return false }, false)
	want.Fields = nil
	if !reflect.DeepEqual(bare, want) || bareSum != "" {
		t.Fatalf("%q without fields:\n got %#v %q\nwant %#v", line, bare, bareSum, want)
	}
	_, _, fast := p.fast(line, nil, true)
	if fast {
		if c, err := jcs.Transform(line); err != nil || !bytes.Equal(c, line) {
			t.Fatalf("%q: read as canonical, but jcs.Transform gives %q, %v", line, c, err)
		}
	}
	return fast
}

// FuzzReadMatchesParse: a lineReader reads every line as parseLine does,
// to the record, the hash and the error, with and without fields; what
// it reads without parseLine is in RFC 8785 form already.
func FuzzReadMatchesParse(f *testing.F) {
	for _, s := range readSeeds(f) {
		f.Add([]byte(s))
	}
	var p lineReader
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsParseLine(t, &p, line)
	})
}

// TestReadFastPath: the lines a writer writes take the fast path (so that
// FuzzReadMatchesParse compares two readers, not one with itself), and
// lines in any other form do not.
func TestReadFastPath(t *testing.T) {
	var p lineReader
	golden := goldenLines(t)
	for _, s := range golden {
		if !sameAsParseLine(t, &p, []byte(s)) {
			t.Errorf("golden line not read by the fast path: %s", s)
		}
	}
	var e encoder
	ev := Event{Type: TypeLogRecovered, Epoch: "e", Run: "r", Fields: map[string]any{
		FieldTorn: []TornLine{{Offset: 5, Bytes: 3, Digest: digestOf([]byte("abc"))}}, "note": "tab\there \x01 \"q\" \\ <&> \u2028 é", "n": -12,
		"big": uint64(1) << 60, "f": 1.5, "nested": map[string]any{"z": []any{}, "a": map[string]any{}, "é": nil, "\U0001F600": true}}}
	line, _, err := e.seal(nil, GenesisPrev, 7, time.Date(2026, 3, 1, 10, 0, 0, 5, time.UTC), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !sameAsParseLine(t, &p, bytes.TrimSuffix(line, []byte("\n"))) {
		t.Errorf("writer's line not read by the fast path: %s", line)
	}
	for _, v := range fastVariants {
		if s := strings.Replace(golden[1], v[0], v[1], 1); !sameAsParseLine(t, &p, []byte(s)) {
			t.Errorf("not read by the fast path: %s", s)
		}
	}
	for _, v := range slowVariants {
		if s := strings.Replace(golden[1], v[0], v[1], 1); sameAsParseLine(t, &p, []byte(s)) {
			t.Errorf("read by the fast path: %s", s)
		}
	}
}
