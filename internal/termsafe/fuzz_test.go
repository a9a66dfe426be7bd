package termsafe

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEscape: what Escape and EscapeText return is valid UTF-8 made only of
// characters a terminal shows, and Escape loses nothing: unquoting its
// output gives back the input, so two names never look the same.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"read_file", "wipe_disk\r\x1b[Kread_file", "a\\b", "\u202eevil", "\xff\xfe", "zero\u200bwidth", "\u009b31m", "tab\there", "日本語", `"quoted"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, out := range map[string]string{"Escape": Escape(s), "EscapeText": EscapeText(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q, not valid UTF-8", name, s, out)
			}
			for _, r := range out {
				if !strconv.IsPrint(r) {
					t.Fatalf("%s(%q) = %q holds %U, which a terminal may act on", name, s, out, r)
				}
			}
		}
		back, err := strconv.Unquote(`"` + strings.ReplaceAll(Escape(s), `"`, `\"`) + `"`)
		if err != nil || back != s {
			t.Fatalf("Escape(%q) = %q unquotes to %q (%v)", s, Escape(s), back, err)
		}
	})
}
