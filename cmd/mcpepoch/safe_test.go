package main

import "testing"

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, text string }{
		{"read_file", "read_file", "read_file"},
		{"café ✓ <ok> \"q\"", "café ✓ <ok> \"q\"", "café ✓ <ok> \"q\""},
		{"wipe_disk\r\x1b[Kread_file", `wipe_disk\r\x1b[Kread_file`, `wipe_disk\r\x1b[Kread_file`},
		{"a\tb\nc", `a\tb\nc`, `a\tb\nc`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b2J", `csi\u009b2J`, `csi\u009b2J`},
		{"elif\u202etxt.exe", `elif\u202etxt.exe`, `elif\u202etxt.exe`},
		{"iso\u2066x\u2069 zw\u200b nbsp\u00a0 ls\u2028", `iso\u2066x\u2069 zw\u200b nbsp\u00a0 ls\u2028`, `iso\u2066x\u2069 zw\u200b nbsp\u00a0 ls\u2028`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`, `bad\xff\xfeutf8`},
		{`back\slash`, `back\\slash`, `back\slash`},
		{`tool "a\x1b" is unknown`, `tool "a\\x1b" is unknown`, `tool "a\x1b" is unknown`},
		{"", "", ""},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := printableText(tc.in); got != tc.text {
			t.Errorf("printableText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}
