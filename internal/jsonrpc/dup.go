package jsonrpc

import (
	"bytes"
	"unicode/utf8"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// duplicateMember returns the first member name, at any depth of the valid
// JSON value b, that an earlier member of the same object already has,
// compared as decoders compare them (escapes undone, invalid UTF-8 read as
// U+FFFD, as encoding/json reads it). RFC 8259 §4 leaves such an object's
// meaning to the reader: one keeps the last value, another the first. It
// reads b once; objects of more than a few members are checked through a
// set of their names.
func duplicateMember(b []byte) (string, bool) {
	type object struct {
		first int                 // index in names of its first member
		set   map[string]struct{} // its names, once it has many
	}
	const few = 16
	var objBuf [16]object
	var nameBuf [64]string
	objs, names := objBuf[:0], nameBuf[:0]
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			objs = append(objs, object{first: len(names)})
		case '}':
			names = names[:objs[len(objs)-1].first]
			objs = objs[:len(objs)-1]
		case '"':
			e := jsonstr.End(b, i)
			if e < 0 {
				return "", false // not valid JSON: not this check's to refuse
			}
			// In valid JSON only a member name is followed by a colon.
			if j := skipSpace(b, e); j < len(b) && b[j] == ':' && len(objs) > 0 {
				o, name := &objs[len(objs)-1], decodedName(b[i:e])
				if o.set != nil {
					if _, dup := o.set[name]; dup {
						return name, true
					}
					o.set[name] = struct{}{}
				} else {
					for _, n := range names[o.first:] {
						if n == name {
							return name, true
						}
					}
					if names = append(names, name); len(names)-o.first > few {
						o.set = make(map[string]struct{}, 2*few)
						for _, n := range names[o.first:] {
							o.set[n] = struct{}{}
						}
					}
				}
			}
			i = e - 1
		}
	}
	return "", false
}

// decodedName returns the name a raw member name (quotes included) stands
// for; one without escapes or invalid UTF-8 is b's own bytes, not copied.
func decodedName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return unsafeString(raw[1 : len(raw)-1])
	}
	s, ok := jsonstr.Append(nil, raw[1:len(raw)-1])
	if !ok {
		return string(raw)
	}
	return string(s)
}
