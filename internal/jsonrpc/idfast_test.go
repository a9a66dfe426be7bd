package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// slowIDKey is IDKey without its fast paths: the exact readers alone.
func slowIDKey(id []byte) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if r, ok := numberRat(id); ok {
			return "n" + r.RatString()
		}
	}
	return "r" + string(id)
}

// FuzzIDFastPaths: the fast paths of IDKey and checkID (plain integers,
// plain strings) give what the exact readers give, for any bytes.
func FuzzIDFastPaths(f *testing.F) {
	for _, s := range []string{`0`, `-0`, `7`, `-12`, `007`, `1.0`, `1e2`, `999999999999999`, `9999999999999999`,
		`9007199254740993`, `"a"`, `"\u0041"`, `"mcpepoch:1"`, `"é"`, "\"\x01\"", `"a\"b"`, `"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, id []byte) {
		if len(id) == 0 {
			return
		}
		if got, want := IDKey(id), slowIDKey(id); got != want {
			t.Fatalf("IDKey(%q) = %q, the exact readers give %q", id, got, want)
		}
		if id := bytes.TrimSpace(id); plainInt(id) {
			r, ok := numberRat(id)
			if !ok || !r.IsInt() || r.Num().CmpAbs(maxExactID) > 0 {
				t.Fatalf("plainInt(%q) but it is not an integer within 2^53", id)
			}
		}
	})
}
