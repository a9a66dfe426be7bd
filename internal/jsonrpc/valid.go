package jsonrpc

import "github.com/mcpepoch/mcpepoch/internal/jsonstr"

// validObject reports whether b is one JSON object with nothing but space
// around it that encoding/json's Valid accepts (RFC 8259 grammar, at most
// MaxDepth levels of nesting; like Valid it does not check UTF-8), and
// calls fn with the raw key and value of each top-level member, in order,
// as eachMember does. It reads b once: a client line is validated and its
// envelope found in the same pass. fn may have been called for members
// before a fault.
func validObject(b []byte, fn func(key, value []byte)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		ke, vs, ok := validKey(b, i)
		if !ok {
			return false
		}
		ve, ok := validValue(b, vs, 1)
		if !ok {
			return false
		}
		fn(b[i:ke], b[vs:ve])
		switch i = skipSpace(b, ve); {
		case i >= len(b):
			return false
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// validKey reads a member name at b[i], the colon and the space after
// it, and returns where the name ends and where the value starts.
func validKey(b []byte, i int) (end, value int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	if end, ok = validString(b, i); !ok {
		return 0, 0, false
	}
	if value = skipSpace(b, end); value >= len(b) || b[value] != ':' {
		return 0, 0, false
	}
	return end, skipSpace(b, value+1), true
}

// validValue returns the index just past the valid JSON value at b[i]
// (no leading space), inside depth open containers. Nested containers are
// tracked on a stack of their kinds, not by recursion.
func validValue(b []byte, i, depth int) (int, bool) {
	var buf [64]byte
	stack := buf[:0] // '{' or '[' of each container open inside the value
	for {
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		switch c := b[i]; {
		case c == '"':
			i, ok = validString(b, i)
		case c == '{' || c == '[':
			if depth+len(stack)+1 > MaxDepth {
				return 0, false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			switch {
			case i < len(b) && b[i] == c+2: // '}' or ']': empty
				i++
				stack = stack[:len(stack)-1]
				ok = true
			case c == '{':
				if _, i, ok = validKey(b, i); !ok {
					return 0, false
				}
				continue // the first member's value
			default:
				continue // the first element
			}
		case c == '-' || c >= '0' && c <= '9':
			i, ok = validNumber(b, i)
		case c == 't':
			i, ok = literal(b, i, "true")
		case c == 'f':
			i, ok = literal(b, i, "false")
		case c == 'n':
			i, ok = literal(b, i, "null")
		}
		if !ok {
			return 0, false
		}
		// A value ended at i: close what it ends, or go on to the next.
		for {
			if len(stack) == 0 {
				return i, true
			}
			top := stack[len(stack)-1]
			if i = skipSpace(b, i); i >= len(b) {
				return 0, false
			}
			if b[i] == top+2 {
				i++
				stack = stack[:len(stack)-1]
				continue
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if _, i, ok = validKey(b, i); !ok {
					return 0, false
				}
			}
			break
		}
	}
}

// validString returns the index just past the valid JSON string at b[i]
// ('"'), as json.Valid takes it (UTF-8 unchecked).
func validString(b []byte, i int) (int, bool) {
	end, _ := jsonstr.Scan(b, i)
	return end, end >= 0
}

// validNumber returns the index just past the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return 0, false
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		i = digits(b, i)
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// literal returns the index just past word at b[i].
func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return 0, false
	}
	return i + len(word), true
}
