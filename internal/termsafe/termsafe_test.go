package termsafe

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, esc, text string }{
		{"read_file", "read_file", "read_file"},
		{"wipe_disk\r\x1b[Kread_file", `wipe_disk\r\x1b[Kread_file`, `wipe_disk\r\x1b[Kread_file`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"a\\b", `a\\b`, `a\b`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"ünïcode ok", "ünïcode ok", "ünïcode ok"},
		{"c1\u009bx", `c1\u009bx`, `c1\u009bx`},
	} {
		if got := Escape(tc.in); got != tc.esc {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.esc)
		}
		if got := EscapeText(tc.in); got != tc.text {
			t.Errorf("EscapeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
	if got := Join([]string{"a", "b\x1b"}, ", "); got != `a, b\x1b` {
		t.Errorf("Join = %q", got)
	}
}
