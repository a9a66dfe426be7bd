package audit

import (
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Checking that a line is in RFC 8785 form, in one pass over its bytes
// and with no tree: each function takes a value at b[i] and returns its
// end, or -1 when the value is not in the form jcs.Transform writes (or
// is one this check leaves to jcs; see parse.go).

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
// no control byte, and only the escapes \" \\ \b \f \n \r \t and \u00XX
// (lowercase) for the other control bytes.
func canonicalString(b []byte, i int) int {
	for i++; i < len(b); {
		c := b[i]
		if plainByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || b[i+2] != '0' || b[i+3] != '0' || !lowerHex(b[i+4]) || !lowerHex(b[i+5]) {
					return -1
				}
				switch u := unhex(b[i+4])<<4 | unhex(b[i+5]); {
				case u >= 0x20, u == '\b', u == '\f', u == '\n', u == '\r', u == '\t':
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return -1
			}
			i += size
		}
	}
	return -1
}

// plainByte[c] is whether c stands for itself in a string in RFC 8785
// form: ASCII, not a control byte, not " or \.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

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
		for _, c := range key {
			if c == '\\' {
				return -1
			}
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
