package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// The scanner below reads the top level of a JSON object and steps over
// member values without decoding them: a string is skipped by searching
// for its closing quote (jsonstr.End, so at memory speed), a nested
// object or array by matching its brackets outside strings. It checks
// structure (strings closed, brackets matched, members separated), not
// the contents of skipped values: a number or an escape inside a result
// is the receiving peer's to read.

var (
	errUnterminated = errors.New("unexpected end of JSON input")
	errSyntax       = errors.New("invalid JSON")
)

// skipValue returns the index just past the JSON value starting at b[i]
// (no leading space).
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errUnterminated
	}
	switch b[i] {
	case '"':
		if e := jsonstr.End(b, i); e > 0 {
			return e, nil
		}
		return 0, errUnterminated
	case '{', '[':
		return skipContainer(b, i)
	case '}', ']', ',', ':':
		return 0, errSyntax
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	return j, nil
}

// skipContainer returns the index just past the object or array starting
// at b[i], checking that brackets match.
func skipContainer(b []byte, i int) (int, error) {
	var buf [64]byte
	stack := buf[:0] // on the heap only past 64 levels
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			e := jsonstr.End(b, j)
			if e < 0 {
				return 0, errUnterminated
			}
			j = e - 1
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if n := len(stack); n == 0 || stack[n-1] != c {
				return 0, errSyntax
			} else if stack = stack[:n-1]; n == 1 {
				return j + 1, nil
			}
		}
	}
	return 0, errUnterminated
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
		return true
	}
	return false
}

// eachMember calls fn with the raw key (quotes included) and the value of
// each member of the object starting at b[i] ('{'), in order, and returns
// the index just past the object.
func eachMember(b []byte, i int, fn func(key, value []byte)) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, errors.New("not a JSON object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return 0, errUnterminated
		}
		if b[i] != '"' {
			return 0, errSyntax
		}
		ke := jsonstr.End(b, i)
		if ke < 0 {
			return 0, errUnterminated
		}
		key := b[i:ke]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		vs := skipSpace(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return 0, err
		}
		fn(key, b[vs:ve])
		i = skipSpace(b, ve)
		switch {
		case i >= len(b):
			return 0, errUnterminated
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// keyName returns the member name of a raw key, unescaped.
func keyName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	s, ok := jsonstr.Append(nil, raw[1:len(raw)-1])
	if !ok {
		return string(raw) // an invalid escape: a name no watched member has
	}
	return string(s)
}

// keyIs reports whether raw names name, exactly or, with fold, as
// encoding/json matches names (case-insensitively).
func keyIs(raw []byte, name string, fold bool) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		k := raw[1 : len(raw)-1]
		if fold {
			return strings.EqualFold(string(k), name)
		}
		return string(k) == name
	}
	if fold {
		return strings.EqualFold(keyName(raw), name)
	}
	return keyName(raw) == name
}

// wholeObject runs eachMember over all of doc, which must be one object
// with nothing but space after it.
func wholeObject(doc []byte, fn func(key, value []byte)) error {
	end, err := eachMember(doc, skipSpace(doc, 0), fn)
	if err != nil {
		return err
	}
	if skipSpace(doc, end) != len(doc) {
		return errors.New("data after the object")
	}
	return nil
}

// Member returns the value of the top-level member name of the JSON
// object obj, matched as encoding/json matches struct fields (the last of
// a name, case-insensitively), without reading any other value: a tools/call
// result's isError is found by stepping over its content, not parsing it.
// It reports false when obj is not an object or lacks the member.
func Member(obj []byte, name string) (json.RawMessage, bool) {
	var v json.RawMessage
	found := false
	_, err := eachMember(obj, skipSpace(obj, 0), func(key, value []byte) {
		if keyIs(key, name, true) {
			v, found = value, true
		}
	})
	return v, found && err == nil
}

// Members calls fn with the raw key (quotes and escapes included) and the
// raw value of each top-level member of the JSON object obj, in order,
// without decoding any value. It returns an error when obj is not one
// object with nothing but space after it; fn may have been called for the
// members before the fault.
func Members(obj []byte, fn func(key, value []byte)) error {
	return wholeObject(obj, fn)
}

// Elements calls fn with the raw value of each element of the JSON array
// arr, in order, without decoding any (values are stepped over as
// [Members] steps over them). It returns an error when arr is not one
// array with nothing but space after it; fn may have been called for the
// elements before the fault.
func Elements(arr []byte, fn func(value []byte)) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return errors.New("not a JSON array")
	}
	if i = skipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return trailing(arr, i+1)
	}
	for {
		e, err := skipValue(arr, i)
		if err != nil {
			return err
		}
		fn(arr[i:e])
		switch i = skipSpace(arr, e); {
		case i >= len(arr):
			return errUnterminated
		case arr[i] == ',':
			i = skipSpace(arr, i+1)
		case arr[i] == ']':
			return trailing(arr, i+1)
		default:
			return errSyntax
		}
	}
}

// trailing refuses anything but space in b from i on.
func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errors.New("data after the array")
	}
	return nil
}
