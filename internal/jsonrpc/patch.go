package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SetMember returns doc with the member at path (object keys from the top
// level down) set to value, changing no other byte: the rest of doc keeps
// its member order, spacing and string escapes, so that a peer sees what
// the other peer wrote except for the one member the host must change.
// Missing objects on the way are inserted (a null one is replaced); a
// member named twice is set where encoding/json reads it, at its last
// occurrence. It fails when doc, or a value on the path, is not a JSON
// object, or value is not valid JSON.
func SetMember(doc []byte, value json.RawMessage, path ...string) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("set member: empty path")
	}
	if !json.Valid(value) {
		return nil, errors.New("set member: value is not valid JSON")
	}
	if !json.Valid(doc) {
		return nil, errors.New("set member: not valid JSON")
	}
	return setIn(doc, skipSpace(doc, 0), value, path)
}

// GetMember returns the value at path in doc, as its bytes, and whether it
// is there (encoding/json's reading: the last of two members of one name).
func GetMember(doc []byte, path ...string) (json.RawMessage, bool) {
	at, end := skipSpace(doc, 0), 0
	for _, key := range path {
		if at >= len(doc) || doc[at] != '{' {
			return nil, false
		}
		s, e, ok, err := findMember(doc, at, key)
		if err != nil || !ok {
			return nil, false
		}
		at, end = s, e
	}
	if len(path) == 0 {
		return nil, false
	}
	return doc[at:end], true
}

func setIn(doc []byte, at int, value json.RawMessage, path []string) ([]byte, error) {
	if bytes.HasPrefix(doc[at:], []byte("null")) {
		return splice(doc, at, at+4, nested(path, value)), nil
	}
	if at >= len(doc) || doc[at] != '{' {
		return nil, fmt.Errorf("set member %s: not a JSON object", strings.Join(path, "."))
	}
	start, end, ok, err := findMember(doc, at, path[0])
	if err != nil {
		return nil, err
	}
	switch {
	case ok && len(path) == 1:
		return splice(doc, start, end, value), nil
	case ok:
		return setIn(doc, start, value, path[1:])
	}
	member := append(encodeKey(path[0]), ':')
	if len(path) == 1 {
		member = append(member, value...)
	} else {
		member = append(member, nested(path[1:], value)...)
	}
	if inner := skipSpace(doc, at+1); doc[inner] != '}' {
		member = append(member, ',')
	}
	return splice(doc, at+1, at+1, member), nil
}

// findMember finds key in the object starting at doc[at] and returns the
// span of its value (the last one when the key repeats), matched exactly.
func findMember(doc []byte, at int, key string) (start, end int, ok bool, err error) {
	_, err = eachMember(doc, at, func(k, v []byte) {
		if keyIs(k, key, false) {
			start = cap(doc) - cap(v)
			end, ok = start+len(v), true
		}
	})
	if err != nil {
		return 0, 0, false, err
	}
	return start, end, ok, nil
}

// nested returns {"a":{"b":value}} for path a, b.
func nested(path []string, value json.RawMessage) []byte {
	var b []byte
	for _, k := range path {
		b = append(append(append(b, '{'), encodeKey(k)...), ':')
	}
	b = append(b, value...)
	return append(b, bytes.Repeat([]byte("}"), len(path))...)
}

func encodeKey(k string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(k) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func splice(doc []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(doc)-(end-start)+len(with))
	out = append(out, doc[:start]...)
	out = append(out, with...)
	return append(out, doc[end:]...)
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}
