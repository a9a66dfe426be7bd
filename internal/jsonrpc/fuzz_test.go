package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseClient: no client line makes the envelope readers panic, and
// every answer the host could send to it (an error under its lenient id,
// its line with the id replaced) is valid JSON.
func FuzzParseClient(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":007,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
		`{"jsonrpc":"2.0","ID":1,"id":2,"method":"x"}`,
		`{"id":"\u0041","method":"tools/call","params":{"name":""}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[1,2]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseClient(line)
		if err == nil && m == nil {
			t.Fatal("ParseClient: no message and no error")
		}
		if err == nil && len(m.ID) > 0 && !json.Valid(m.ID) {
			t.Fatalf("ParseClient accepted id %q, which is not valid JSON", m.ID)
		}
		if m != nil {
			IDKey(m.ID)
		}
		id := LenientID(line)
		if out := ErrorLine(id, CodeInvalidRequest, "x", nil); !json.Valid(bytes.TrimSpace(out)) {
			t.Fatalf("ErrorLine(%q) = %q, not valid JSON", id, out)
		}
		if out, err := ReplaceID(line, json.RawMessage(`"mcpepoch:1"`)); err == nil && !json.Valid(out) {
			t.Fatalf("ReplaceID = %q, not valid JSON", out)
		}
	})
}

// FuzzParse: the lenient envelope reader (a server's lines) never panics,
// and the key of any id it returns is stable.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":"mcpepoch:3","error":{"code":-1,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"id":1.0e2,"result":null}`,
		`{"id":123456789012345678901234567890,"result":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Parse(line)
		if err != nil {
			return
		}
		if k1, k2 := IDKey(m.ID), IDKey(m.ID); k1 != k2 {
			t.Fatalf("IDKey(%q) unstable: %q, %q", m.ID, k1, k2)
		}
		if out := ErrorLine(m.ID, CodeInvalidRequest, "x", nil); !json.Valid(bytes.TrimSpace(out)) {
			t.Fatalf("ErrorLine(%q) = %q, not valid JSON", m.ID, out)
		}
	})
}

// FuzzIDKey: any bytes as an id give a key, quickly (an exponent such as
// 1e1000000000 must not be expanded), and equal values give equal keys.
func FuzzIDKey(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `1.0`, `1e2`, `"a"`, `"\u0041"`, `1e1000000000`, `007`, `"a` + "\t" + `b"`, `null`, ` 5 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, id []byte) {
		k := IDKey(id)
		if len(id) > 0 && k == "" && len(bytes.TrimSpace(id)) > 0 {
			t.Fatalf("IDKey(%q) is empty", id)
		}
		var v any
		if json.Unmarshal(id, &v) != nil {
			return
		}
		if s, ok := v.(string); ok {
			again, _ := json.Marshal(s)
			if IDKey(again) != k {
				t.Fatalf("IDKey(%q) = %q but IDKey(%s) = %q: the same string", id, k, again, IDKey(again))
			}
		}
	})
}
