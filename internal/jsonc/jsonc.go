// Package jsonc reads JSON with comments and trailing commas, the format
// of tsconfig.json (TypeScript's "JSONC"), by turning it into JSON.
package jsonc

import (
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// Strip turns JSON with comments and trailing commas into JSON: a //
// comment becomes a newline, a /* */ comment a space, a comma before }
// or ] is dropped, and strings (stepped over with jsonstr.End) are
// copied untouched. An unclosed /* ends the output there; an unclosed
// string runs to the end. The result is for encoding/json, which then
// says whether it is JSON.
func Strip(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			j := jsonstr.End(b, i) // just past the closing quote
			if j < 0 {
				j = len(b) // unclosed: the rest is the string's
			}
			out = append(out, b[i:j]...)
			i = j - 1
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := strings.Index(string(b[i+2:]), "*/")
			if end < 0 {
				return out
			}
			i += end + 3
			out = append(out, ' ')
		case c == ']' || c == '}':
			k := len(out) - 1
			for k >= 0 && (out[k] == ' ' || out[k] == '\t' || out[k] == '\n' || out[k] == '\r') {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out = append(out[:k], out[k+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
