package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// seeds are contents at the edges of RFC 8259 §7, where a hand-written
// reader may differ from encoding/json.
var seeds = []string{
	``, `a`, `plain ascii text`, `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\u0041`, `\u00e9`, `\u00E9`, `\uFFFF`,
	`\ud83d\ude00`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\ude00\ud83d`, `\ud83d\u0041`, `\ud83dx`, `\ud83d\`,
	`\ud83d\u`, `\ud83d\ud83d\ude00`, `\u00zz`, `\u00e`, `\u`, `\q`, `\`, `a\`, `\\\`, `"`, `a"b`,
	"\x00", "\x1f", "\x7f", "é", "\xff", "\xc3", "\xe2\x82", "a\xc0\xafb", "\xed\xa0\x80", "\U0001F600",
	"\xf4\x90\x80\x80", `\u0000`, `\u001f`, `x\u2028y`,
}

// Append reads contents as encoding/json reads the string they are in,
// and refuses what it refuses.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		checkAppend(t, s)
	}
}

func FuzzAppendMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(checkAppend)
}

func checkAppend(t *testing.T, s string) {
	t.Helper()
	var want string
	werr := json.Unmarshal([]byte(`"`+s+`"`), &want)
	check := func(kind string, out []byte, ok bool) {
		switch {
		case ok != (werr == nil):
			t.Fatalf("Append(%q) of a %s: ok %v; encoding/json: %v", s, kind, ok, werr)
		case string(out[:4]) != "kept":
			t.Fatalf("Append(%q) of a %s lost dst: %q", s, kind, out)
		case ok && string(out[4:]) != want:
			t.Fatalf("Append(%q) of a %s = %q; encoding/json: %q", s, kind, out[4:], want)
		case !ok && len(out) != 4:
			t.Fatalf("Append(%q) of a %s refused it but returned %q", s, kind, out)
		}
	}
	out, ok := Append([]byte("kept"), s)
	check("string", out, ok)
	out, ok = Append([]byte("kept"), []byte(s))
	check("[]byte", out, ok)
	if end, _ := Scan(`"`+s+`"`, 0); end == len(s)+2 && werr != nil {
		t.Fatalf("Scan took %q, which encoding/json refuses: %v", s, werr)
	}
}

// Scan and End stop at the same quote, the first one no backslash
// escapes; Scan takes the string that ends there exactly when
// encoding/json takes it as a JSON text, and its flags say what the
// contents hold.
func TestScanMatchesEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		checkScan(t, []byte(`"`+s+`"`))
		checkScan(t, []byte(`"`+s+`", "x"`))
		checkScan(t, []byte(`"`+s))
	}
}

func FuzzScanMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(`"` + s + `"`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte(`"`), b...)
		}
		checkScan(t, b)
	})
}

func checkScan(t *testing.T, b []byte) {
	t.Helper()
	e := End(b, 0)
	end, f := Scan(b, 0)
	if end2, f2 := Scan(string(b), 0); end2 != end || (end >= 0 && f2 != f) {
		t.Fatalf("Scan(%q): %d %v on a []byte, %d %v on a string", b, end, f, end2, f2)
	}
	if end >= 0 && end != e {
		t.Fatalf("Scan(%q) = %d, End = %d", b, end, e)
	}
	if e < 0 {
		if end >= 0 {
			t.Fatalf("Scan(%q) = %d, but End finds no closing quote", b, end)
		}
		return
	}
	if valid := json.Valid(b[:e]); valid != (end >= 0) {
		t.Fatalf("Scan(%q) = %d; json.Valid(%q) = %v", b, end, b[:e], valid)
	}
	if end < 0 {
		return
	}
	in := b[1 : end-1]
	want := Flags(0)
	if bytes.IndexByte(in, '\\') >= 0 {
		want |= Escaped
	}
	if strings.IndexFunc(string(in), func(r rune) bool { return r >= 0x80 }) >= 0 {
		want |= NonASCII
	}
	if f != want {
		t.Fatalf("Scan(%q) flags %b, want %b", b, f, want)
	}
}

// End steps over escaped quotes and stops at the first that closes.
func TestEnd(t *testing.T) {
	for _, c := range []struct {
		in      string
		i, want int
	}{
		{`""`, 0, 2}, {`"a"x`, 0, 3}, {`"\""`, 0, 4}, {`"\\"`, 0, 4}, {`"\\\""`, 0, 6}, {`"\\\\"x`, 0, 6},
		{`"a\"`, 0, -1}, {`"`, 0, -1}, {`x"a"`, 1, 4}, {`\"a"`, 1, 4}, {`x"\"`, 1, -1},
	} {
		if got := End([]byte(c.in), c.i); got != c.want {
			t.Errorf("End(%s, %d) = %d, want %d", c.in, c.i, got, c.want)
		}
	}
}
