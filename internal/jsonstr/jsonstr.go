// Package jsonstr scans and unescapes JSON strings (RFC 8259 §7) in place:
// the one string scanner every hand-written JSON fast path uses (the
// envelope readers of internal/jsonrpc, the audit log's RFC 8785 readers,
// the manifest decoder). Each of those fast paths is held to the library
// it stands in for by its own differential fuzz target; this package's
// are held to encoding/json's string decoding (FuzzAppendMatchesEncodingJSON,
// FuzzScanMatchesEncodingJSON).
//
// A string is addressed by the index of its opening quote in a larger
// text, and its contents are the bytes between its quotes, escapes
// included. Three readings, from cheapest:
//
//   - [End] finds where a string ends and checks nothing else: for
//     stepping over strings whose contents are another reader's to check.
//   - [Scan] finds where a well-formed string ends and reports what its
//     contents hold ([Flags]), so that a caller can keep the contents as
//     they are when they have no escape.
//   - [Append] decodes contents as encoding/json's decoder does.
//
// None of them checks UTF-8 unless it says so: JSON text is UTF-8 (RFC
// 8259 §8.1), but encoding/json's Valid does not check it, and its
// decoder replaces each byte that is not valid UTF-8 with U+FFFD rather
// than refusing it. A caller that must refuse such bytes calls
// utf8.Valid on contents [Scan] flags [NonASCII].
package jsonstr

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// End returns the index just past the closing quote of the string that
// starts at b[i], which must be '"', or -1 when no quote closes it. A
// quote after an odd run of backslashes is escaped and does not close
// it. End looks at quotes and the backslashes before them only (each
// quote is found with bytes.IndexByte, at memory speed): the escapes,
// control bytes and UTF-8 in between are not checked.
func End(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0 // backslashes right before the quote
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// Flags says what the contents of a string hold besides printable ASCII
// and DEL, which stand for themselves.
type Flags uint8

const (
	// Escaped: at least one escape (a backslash). Contents without one
	// stand for their own bytes (but for invalid UTF-8, see NonASCII).
	Escaped Flags = 1 << iota
	// NonASCII: at least one byte of 0x80 or more. Whether they are
	// valid UTF-8 is not checked.
	NonASCII
)

// Scan returns the index just past the closing quote of the string that
// starts at s[i], which must be '"', when the string is well formed by
// RFC 8259 §7: no raw control byte (below 0x20), and each escape one of
// \" \\ \/ \b \f \n \r \t or \u and four hex digits (either case). It
// returns -1 for a string that is not well formed or not closed. f says
// what the contents hold. Like encoding/json's Valid it does not check
// UTF-8, nor pair \u surrogates (the decoder reads a lone one as U+FFFD).
func Scan[T ~string | ~[]byte](s T, i int) (end int, f Flags) {
	for i++; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, f
		case c >= utf8.RuneSelf:
			f |= NonASCII
			i++
		case c == '\\':
			if i+1 >= len(s) {
				return -1, f
			}
			f |= Escaped
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return -1, f
				}
				i += 6
			default:
				return -1, f
			}
		default:
			return -1, f // a control byte
		}
	}
	return -1, f
}

// Append appends to dst the string that the contents s (the bytes
// between a string's quotes) stand for, as encoding/json's decoder reads
// them: each escape undone, a \u escape of a high surrogate followed by
// one of a low surrogate read as one character, a lone surrogate escape
// and each byte that is not valid UTF-8 (as utf8.DecodeRune finds it)
// read as U+FFFD. The result is valid UTF-8. ok is false, and the
// result dst as it was, for contents encoding/json refuses: a raw
// control byte or quote, or an escape [Scan] refuses. Contents that
// [Scan] took are never refused.
func Append[T ~string | ~[]byte](dst []byte, s T) (out []byte, ok bool) {
	n0 := len(dst)
	start := 0 // s[start:i] is copied when something stops the run
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			if r, size := decodeRune(s, i); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		if c != '\\' || i+1 >= len(s) {
			return dst[:n0], false // a quote, a control byte, or a backslash that ends s
		}
		dst = append(dst, s[start:i]...)
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r := u4(s, i)
			if r < 0 {
				return dst[:n0], false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if pair := utf16.DecodeRune(r, u4(s, i)); pair != utf8.RuneError {
					r = pair
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r) // a lone surrogate as U+FFFD
		default:
			return dst[:n0], false
		}
		start = i
	}
	return append(dst, s[start:]...), true
}

// u4 returns the code unit of the \u escape at s[i], or -1 when there is
// none.
func u4[T ~string | ~[]byte](s T, i int) rune {
	if len(s)-i < 6 || s[i] != '\\' || s[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range [4]byte{s[i+2], s[i+3], s[i+4], s[i+5]} {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// decodeRune is utf8.DecodeRune of s[i:], for a string or a byte slice.
func decodeRune[T ~string | ~[]byte](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	return utf8.DecodeRune(buf[:copy(buf[:], s[i:])])
}

// plain[c] says whether c stands for itself inside a string and is
// ASCII: not '"', '\\' or a control byte (RFC 8259 §7).
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
