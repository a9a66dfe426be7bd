package jsonrpc

import "unicode/utf8"

// ValidUTF8 returns line with each byte that does not start a valid UTF-8
// sequence replaced by U+FFFD, as encoding/json's decoder reads it (JSON
// text is UTF-8, RFC 8259 §8.1; a strict peer refuses anything else). A
// line that is valid UTF-8, the usual case, is returned as it is, with no
// copy: the cost is one utf8.Valid pass. In a line that is valid JSON the
// bytes replaced can only sit inside strings, so the result is valid
// JSON too and means what a lenient decoder would have read.
func ValidUTF8(line []byte) []byte {
	if utf8.Valid(line) {
		return line
	}
	out := make([]byte, 0, len(line)+16)
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, line[i:i+size]...)
		}
		i += size
	}
	return out
}
