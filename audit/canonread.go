package audit

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// Checking that a line is in RFC 8785 form, in one pass over its bytes
// and with no tree: each function takes a value at b[i] and returns its
// end, or -1 when the value is not in the form jcs.Transform writes (or
// is one this check leaves to jcs; see parse.go). Strings are scanned by
// internal/jsonstr; only one with an escape or a non-ASCII byte is read
// again, for the escapes and the UTF-8 RFC 8785 allows.

// canonicalEnd returns the end of the JSON value at b[i] when it is in
// the RFC 8785 form jcs.Transform writes, else -1. depth is the value's
// nesting.
func canonicalEnd(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return canonicalString(b, i)
	case c == '{':
		return canonicalObject(b, i, depth, nil)
	case c == '[':
		return canonicalArray(b, i, depth)
	case c == 't':
		return literalEnd(b, i, "true")
	case c == 'f':
		return literalEnd(b, i, "false")
	case c == 'n':
		return literalEnd(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return canonicalNumber(b, i)
	}
	return -1
}

func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// canonicalNumber takes a number whose RFC 8785 form is its own text: an
// integer of at most 15 digits but -0, or any JSON number jcs writes back
// unchanged.
func canonicalNumber(b []byte, i int) int {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	n := i - digits
	if n == 0 || b[digits] == '0' && n > 1 {
		return -1
	}
	if n <= 15 && (i == len(b) || b[i] != '.' && b[i] != 'e' && b[i] != 'E') {
		if b[digits] == '0' && digits > start {
			return -1 // -0
		}
		return i
	}
	if i < len(b) && b[i] == '.' {
		if i++; !isDigits(b, &i) {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !isDigits(b, &i) {
			return -1
		}
	}
	tok := string(b[start:i])
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return -1
	}
	if s, err := jcs.NumberToJSON(f); err != nil || s != tok {
		return -1
	}
	return i
}

// isDigits moves *i past one or more digits; false if there is none.
func isDigits(b []byte, i *int) bool {
	start := *i
	for *i < len(b) && b[*i] >= '0' && b[*i] <= '9' {
		*i++
	}
	return *i > start
}

// canonicalString takes a string as jcs.Transform writes it: valid UTF-8,
// no control byte, and only the escapes \" \\ \b \f \n \r \t and \u00xx
// (lowercase) for the other control bytes.
func canonicalString(b []byte, i int) int {
	end, f := jsonstr.Scan(b, i)
	switch {
	case end < 0:
		return -1
	case f&jsonstr.NonASCII != 0 && !utf8.Valid(b[i+1:end-1]):
		return -1
	case f&jsonstr.Escaped != 0 && !canonicalEscapes(b[i+1:end-1]):
		return -1
	}
	return end
}

// canonicalEscapes reports whether every escape in s, the contents of a
// string jsonstr.Scan took, is one jcs.Transform writes.
func canonicalEscapes(s []byte) bool {
	for {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			return true
		}
		switch s[k+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			s = s[k+2:]
		case 'u':
			if s[k+2] != '0' || s[k+3] != '0' || !lowerHex(s[k+4]) || !lowerHex(s[k+5]) {
				return false
			}
			switch u := unhex(s[k+4])<<4 | unhex(s[k+5]); {
			case u >= 0x20, u == '\b', u == '\f', u == '\n', u == '\r', u == '\t':
				return false
			}
			s = s[k+6:]
		default: // \/
			return false
		}
	}
}

// lowerHex reports whether c is 0-9 or a-f; '0' and '1' are the only
// ones a control byte's escape starts with.
func lowerHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

func canonicalArray(b []byte, i, depth int) int {
	if depth > maxReadDepth {
		return -1
	}
	i++
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = canonicalEnd(b, i, depth+1); i < 0 || i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// canonicalObject takes an object whose members are in RFC 8785 order,
// each key once and with no escape; ms, when not nil, gets its members.
func canonicalObject(b []byte, i, depth int, ms *[]lineMember) int {
	if depth > maxReadDepth || i >= len(b) || b[i] != '{' {
		return -1
	}
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	var prev []byte
	for n := 0; ; n++ {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		start := i
		if i = canonicalString(b, i); i < 0 {
			return -1
		}
		key := b[start+1 : i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return -1
		}
		if n > 0 && compareKeys(prev, key) >= 0 {
			return -1
		}
		prev = key
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		vstart := i + 1
		if i = canonicalEnd(b, vstart, depth+1); i < 0 || i >= len(b) {
			return -1
		}
		if ms != nil {
			*ms = append(*ms, lineMember{key: key, val: b[vstart:i], start: start, end: i})
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// compareKeys is compareUTF16 of two keys' bytes.
func compareKeys(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
				return int(a[i]) - int(b[i])
			}
			return compareUTF16(string(a), string(b))
		}
	}
	return len(a) - len(b)
}
