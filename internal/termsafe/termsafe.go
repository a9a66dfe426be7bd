// Package termsafe escapes strings that others wrote (servers, hosts,
// files) before they reach a person's terminal, where control and format
// characters could rewrite what is shown: a tool named
// "wipe_disk\r\x1b[Kread_file" must not look like "read_file".
package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s ready for a terminal: every character a terminal could
// act on instead of showing is escaped the way strconv.Quote escapes it,
// without the quotes. That is C0 controls (\r, \x1b …), DEL, C1 controls
// (\u009b …), Unicode format characters (bidi overrides such as \u202e,
// zero-width characters), separators other than the ASCII space, and bytes
// that are not UTF-8 (\xff). A backslash becomes \\, so an escaped name
// cannot pass for another. Other strings come back unchanged.
func Escape(s string) string { return escape(s, true) }

// EscapeText is Escape for text that quotes names with %q already, such as
// error messages: a backslash stays as it is, so a quoted name is not
// escaped twice; controls are still escaped.
func EscapeText(s string) string { return escape(s, false) }

// Join is Escape of each element of l, joined by sep.
func Join(l []string, sep string) string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = Escape(s)
	}
	return strings.Join(out, sep)
}

// escape implements Escape and EscapeText; backslash says whether \ is
// escaped too.
func escape(s string, backslash bool) string {
	if !needsEscape(s, backslash) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string, backslash bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == '\\' && backslash) || (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}
