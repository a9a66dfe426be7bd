package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// The record encoder writes the RFC 8785 (JCS) form of a record directly,
// with a type switch over the value types events carry (strings, booleans,
// integers, []string, []any, map[string]any, map[string]string, []TornLine,
// json.Number) and no reflection. It gives exactly the bytes the reference
// path gives, json.Marshal then jcs.Transform with integers beyond ±2^53
// turned into strings (TestCanonicalMatchesJCS, FuzzCanonicalMatchesJCS);
// any other value type takes that reference path for its own value.

// maxDepth bounds the nesting of event field values.
const maxDepth = 64

// member is one encoded top-level member of a record.
type member struct {
	key string
	val []byte
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units.
// Code point order and UTF-16 order differ only where a code point beyond
// U+FFFF (a surrogate pair, 0xD800…) meets one in U+E000…U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca < utf8.RuneSelf && cb < utf8.RuneSelf {
			return int(ca) - int(cb)
		}
		for i > 0 && !utf8.RuneStart(a[i]) { // back to the rune both share the start of
			i--
		}
		return compareRunes(a[i:], b[i:])
	}
	return len(a) - len(b)
}

func compareRunes(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if ua, ub := firstUnit(ra), firstUnit(rb); ua != ub {
				return int(ua) - int(ub)
			}
			return int(ra) - int(rb) // one high surrogate: low ones follow code points
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit returns the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		r1, _ := utf16.EncodeRune(r)
		return r1
	}
	return r
}

const hexDigits = "0123456789abcdef"

// jcsPlain says which bytes appendString copies as they are: printable
// ASCII but " and \. One load per byte of every string of every record.
var jcsPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JCS string: ", \ and the C0 controls escaped
// (\b \t \n \f \r by name, the others as \u00xx), every other character
// as itself; an invalid UTF-8 byte becomes U+FFFD, as json.Marshal makes it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jcsPlain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || n != 1 {
				i += n
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validKey returns s as json.Marshal would write it as a key: each invalid
// UTF-8 byte replaced by U+FFFD.
func validKey(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// appendInt appends n as a JCS number, or as a string of its digits when
// its magnitude exceeds 2^53 (see the package doc).
func appendInt(b []byte, n int64) []byte {
	if n > 1<<53 || n < -(1<<53) {
		b = append(b, '"')
		b = strconv.AppendInt(b, n, 10)
		return append(b, '"')
	}
	return strconv.AppendInt(b, n, 10)
}

func appendUint(b []byte, n uint64) []byte {
	if n > 1<<53 {
		b = append(b, '"')
		b = strconv.AppendUint(b, n, 10)
		return append(b, '"')
	}
	return strconv.AppendUint(b, n, 10)
}

// appendNumber appends a JSON number literal as JCS writes it: an integer
// literal beyond ±2^53 (or beyond int64) as a string of its digits, any
// other number as its IEEE 754 double in ES6 form.
func appendNumber(b []byte, s string) ([]byte, error) {
	if !validNumber(s) {
		return nil, fmt.Errorf("invalid number literal %.40q", s)
	}
	if !strings.ContainsAny(s, ".eE") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return appendString(b, s), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %.40s out of range", s)
	}
	out, err := jcs.NumberToJSON(f)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// validNumber reports whether s matches the JSON number grammar (RFC 8259 §6).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

var errTooDeep = errors.New("values nested too deeply")

// appendValue appends the JCS form of v.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return appendInt(b, int64(x)), nil
	case int64:
		return appendInt(b, x), nil
	case int32:
		return appendInt(b, int64(x)), nil
	case uint:
		return appendUint(b, uint64(x)), nil
	case uint64:
		return appendUint(b, x), nil
	case uint32:
		return appendUint(b, uint64(x)), nil
	case json.Number:
		return appendNumber(b, string(x))
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), nil
	case []any:
		return appendArray(b, x, depth)
	case map[string]any:
		return appendObject(b, x, depth)
	case map[string]string:
		if x == nil {
			return append(b, "null"...), nil
		}
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return appendObject(b, m, depth)
	case []TornLine:
		return appendTorn(b, x), nil
	}
	return appendReflected(b, v, depth)
}

func appendArray(b []byte, x []any, depth int) ([]byte, error) {
	if x == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range x {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, e, depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendObject(b []byte, x map[string]any, depth int) ([]byte, error) {
	if x == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(x))
	raw := make(map[string]string, len(x))
	for k := range x {
		vk := validKey(k)
		if _, dup := raw[vk]; dup {
			return nil, fmt.Errorf("duplicate member name %.40q", vk)
		}
		raw[vk] = k
		keys = append(keys, vk)
	}
	slices.SortFunc(keys, compareUTF16)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, x[raw[k]], depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendTorn(b []byte, ts []TornLine) []byte {
	if ts == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"bytes":`...)
		b = appendInt(b, t.Bytes)
		b = append(b, `,"digest":`...)
		b = appendString(b, t.Digest)
		b = append(b, `,"offset":`...)
		b = appendInt(b, t.Offset)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendReflected encodes a value of any other type as the reference path
// does: json.Marshal, decoded with UseNumber, then encoded above.
func appendReflected(b []byte, v any, depth int) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var w any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	return appendValue(b, w, depth)
}
