package audit

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// Tool call arguments are digested in their RFC 8785 form. Most arguments
// are objects of strings, booleans and small integers, for which that
// form is the input without its insignificant whitespace and with object
// members sorted; fastCanon.canonical writes it in one pass over the bytes, with
// no tree. It gives up (ok false), and jcs.Transform does the work, on
// anything else: an escape in a string, a control or non-UTF-8 byte, a
// number with a fraction or exponent or more than 15 digits, -0, a
// duplicate key, nesting deeper than maxFastDepth, or input that is not
// JSON. Where it does not give up its output is jcs.Transform's, byte for
// byte (FuzzCanonicalFastMatchesJCS).

// maxFastDepth bounds the nesting fastCanon handles itself.
const maxFastDepth = 64

type fastCanon struct {
	in    []byte
	i     int
	depth int
	out   []byte
	spans []span // object members of the objects being written, innermost last
	tmp   []byte // an object's members while they are sorted
}

// span is one "key":value member of an object in out; its key is
// in[k0:k1].
type span struct {
	k0, k1     int
	start, end int
}

// maxKeptCanon is the largest buffer a reused fastCanon keeps.
const maxKeptCanon = 64 << 10

// canonical returns the RFC 8785 form of in, or ok false (see above), in
// c's buffers, reused from the last call: out is valid until the next.
func (c *fastCanon) canonical(in []byte) (out []byte, ok bool) {
	if cap(c.out) > maxKeptCanon || cap(c.tmp) > maxKeptCanon {
		c.out, c.tmp = nil, nil
	}
	*c = fastCanon{in: in, out: c.out[:0], spans: c.spans[:0], tmp: c.tmp[:0]}
	c.ws()
	if !c.value() {
		return nil, false
	}
	c.ws()
	if c.i != len(in) {
		return nil, false
	}
	return c.out, true
}

// ws skips the whitespace JSON (and jcs) allows between tokens.
func (c *fastCanon) ws() {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *fastCanon) value() bool {
	if c.i >= len(c.in) {
		return false
	}
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		start, ok := c.str()
		if ok {
			c.out = append(c.out, c.in[start-1:c.i]...)
		}
		return ok
	case b == '-' || b >= '0' && b <= '9':
		return c.integer()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if c.lit(lit) {
				c.out = append(c.out, lit...)
				return true
			}
		}
		return false
	}
}

// ends reports whether a literal or number may end at c.i: jcs reads a
// token up to a structural character, whitespace or the end.
func (c *fastCanon) ends() bool {
	if c.i == len(c.in) {
		return true
	}
	switch c.in[c.i] {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func (c *fastCanon) lit(s string) bool {
	if len(c.in)-c.i < len(s) || string(c.in[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	if !c.ends() {
		c.i -= len(s)
		return false
	}
	return true
}

// integer takes -?(0|[1-9][0-9]{0,14}) but not -0: an integer whose ES6
// form is its own digits.
func (c *fastCanon) integer() bool {
	start := c.i
	if c.in[c.i] == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.in) && c.in[c.i] >= '0' && c.in[c.i] <= '9' {
		c.i++
	}
	n := c.i - digits
	switch {
	case n == 0 || n > 15 || !c.ends():
		return false
	case c.in[digits] == '0' && (n > 1 || digits > start):
		return false // a leading zero, or -0
	}
	c.out = append(c.out, c.in[start:c.i]...)
	return true
}

// str takes a string with no escape, no control byte and valid UTF-8 (as
// jcs.Transform validates it): its contents, in[start:c.i-1], are also its
// RFC 8785 contents. c.i is at the opening quote.
func (c *fastCanon) str() (start int, ok bool) {
	end, f := jsonstr.Scan(c.in, c.i)
	if end < 0 || f&jsonstr.Escaped != 0 || f&jsonstr.NonASCII != 0 && !utf8.Valid(c.in[c.i+1:end-1]) {
		return 0, false
	}
	start, c.i = c.i+1, end
	return start, true
}

func (c *fastCanon) array() bool {
	if c.depth++; c.depth > maxFastDepth {
		return false
	}
	c.i++
	c.out = append(c.out, '[')
	c.ws()
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		c.depth--
		return true
	}
	for {
		c.ws()
		if !c.value() {
			return false
		}
		c.ws()
		if c.i >= len(c.in) {
			return false
		}
		switch c.in[c.i] {
		case ',':
			c.i++
			c.out = append(c.out, ',')
		case ']':
			c.i++
			c.out = append(c.out, ']')
			c.depth--
			return true
		default:
			return false
		}
	}
}

func (c *fastCanon) object() bool {
	if c.depth++; c.depth > maxFastDepth {
		return false
	}
	c.i++
	open := len(c.out)
	c.out = append(c.out, '{')
	c.ws()
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		c.depth--
		return true
	}
	first := len(c.spans)
	for {
		c.ws()
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return false
		}
		start := len(c.out)
		k, ok := c.str()
		if !ok {
			return false
		}
		k1 := c.i - 1
		c.out = append(c.out, c.in[k-1:c.i]...)
		c.out = append(c.out, ':')
		c.ws()
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return false
		}
		c.i++
		c.ws()
		if !c.value() {
			return false
		}
		c.spans = append(c.spans, span{k0: k, k1: k1, start: start, end: len(c.out)})
		c.ws()
		if c.i >= len(c.in) {
			return false
		}
		if c.in[c.i] == ',' {
			c.i++
			c.out = append(c.out, ',')
			continue
		}
		if c.in[c.i] != '}' {
			return false
		}
		c.i++
		break
	}
	ok := c.sortMembers(open, c.spans[first:])
	c.spans = c.spans[:first]
	c.out = append(c.out, '}')
	c.depth--
	return ok
}

// sortMembers puts the members ms, written from out[open+1:], in RFC 8785
// order (by the UTF-16 code units of their keys); false for a duplicate
// key.
func (c *fastCanon) sortMembers(open int, ms []span) bool {
	key := func(m span) []byte { return c.in[m.k0:m.k1] }
	cmp := func(a, b span) int { return compareKeys(key(a), key(b)) }
	sorted := true
	for k := 1; k < len(ms); k++ {
		d := cmp(ms[k-1], ms[k])
		if d == 0 {
			return false
		}
		if d > 0 {
			sorted = false
		}
	}
	if sorted {
		return true
	}
	slices.SortFunc(ms, cmp)
	for k := 1; k < len(ms); k++ {
		if bytes.Equal(key(ms[k-1]), key(ms[k])) {
			return false
		}
	}
	c.tmp = append(c.tmp[:0], c.out[open+1:]...)
	body := c.tmp
	c.out = c.out[:open+1]
	for k, m := range ms {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, body[m.start-open-1:m.end-open-1]...)
	}
	return true
}
