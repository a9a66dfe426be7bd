package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
		`{"jsonrpc":"2.0","id":"\q","method":"x","params":` + strings.Repeat("[", MaxDepth+1) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`,
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
		var pe *ProtocolError
		if errors.As(err, &pe) && m != nil {
			id = m.ID // as the host answers a refused message it could read
		}
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

// FuzzParseAsEncodingJSON: on any valid JSON object, Parse reads the
// envelope exactly as encoding/json does (the reader it replaced), and
// Member finds what encoding/json decodes into a field of that name,
// although neither decodes the values they step over.
func FuzzParseAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}b"}],"isError":true}}`,
		`{"result":{"isError":false,"ISERROR":true},"ID":"x","id":2}`,
		`{"Method":"a","method":null,"params":[1,{"b":"]"}],"error":null}`,
		`{"\u0069d":7,"m\u0065thod":"x\u0041","params":"\\"}`,
		" \t\r{\"id\":1,\"method\":\"ping\"}\r",
		`{"id":1,"method":"a\\","result":[[],{}],"x":{"y":[1,2,{"z":"\\\\\""}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var want struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if !bytes.HasPrefix(bytes.TrimLeft(line, " \t\r\n"), []byte("{")) || !json.Valid(line) {
			return
		}
		werr := json.Unmarshal(line, &want)
		m, err := Parse(line)
		if werr == nil && refusedID(want.ID) {
			// JSON-RPC 2.0 §4 and RFC 8259 §8.1 (Parse's idKind): encoding/json
			// takes these ids, Parse must not.
			if err == nil {
				t.Fatalf("Parse(%q) took id %q, which is not a string, a number or null in UTF-8", line, m.ID)
			}
			return
		}
		if (werr == nil) != (err == nil) {
			t.Fatalf("Parse(%q): error %v, encoding/json: %v", line, err, werr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(m.ID, want.ID) || m.Method != want.Method || !bytes.Equal(m.Params, want.Params) ||
			m.HasResult != (want.Result != nil) || m.HasError != (want.Error != nil) {
			t.Fatalf("Parse(%q) = id %q method %q params %q result %v error %v; encoding/json: %q %q %q %q %q",
				line, m.ID, m.Method, m.Params, m.HasResult, m.HasError, want.ID, want.Method, want.Params, want.Result, want.Error)
		}
		var r struct {
			IsError json.RawMessage `json:"isError"`
		}
		if json.Unmarshal(want.Result, &r) == nil && len(want.Result) > 0 && want.Result[0] == '{' {
			v, ok := Member(m.Result, "isError")
			if ok != (r.IsError != nil) || !bytes.Equal(v, r.IsError) {
				t.Fatalf("Member(%q, isError) = %q %v; encoding/json: %q", m.Result, v, ok, r.IsError)
			}
		}
	})
}

// refusedID reports whether a JSON-RPC 2.0 §4 reader must refuse id: an
// object, an array, a boolean, or a string that is not valid UTF-8.
func refusedID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '{', '[', 't', 'f':
		return true
	case '"':
		return !utf8.Valid(id)
	}
	return false
}

// FuzzStrictObject: the envelope reader decides as encoding/json-based
// reading by name would: every member read into a map by its unescaped
// name, refusing a watched name that appears twice or another name equal
// to a watched one but for case (strings.EqualFold, as encoding/json
// folds). The same lines are refused, and the watched values are the same.
func FuzzStrictObject(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"ID":1}`, `{"id":1,"id":2}`, `{"i\u0064":1,"id":2}`, `{"\u0069d":1}`, `{"paramſ":1}`,
		`{"other":1,"other":2}`, `{"a":"\q"}`, `{"\q":1}`, `{}`, `{"id":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return // ParseClient refuses it before reading members
		}
		var got strictMembers
		err := strictObject(line, clientMembers, &got)
		want, werr := mapStrict(line, clientMembers)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: strictObject error %v, by map %v", line, err, werr)
		}
		if err != nil {
			return
		}
		for i, w := range clientMembers {
			v, ok := want[w]
			if ok != got.found[i] || string(v) != string(got.val[i]) {
				t.Fatalf("%q: member %s = %q (%v), by map %q (%v)", line, w, got.val[i], got.found[i], v, ok)
			}
		}
	})
}

// mapStrict is the reading FuzzStrictObject compares with.
func mapStrict(b []byte, watch []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	var bad error
	err := wholeObject(b, func(raw, v []byte) {
		if bad != nil {
			return
		}
		key := keyName(raw)
		for _, w := range watch {
			if key != w && strings.EqualFold(key, w) {
				bad = errors.New("case")
				return
			}
		}
		if _, dup := out[key]; dup && slices.Contains(watch, key) {
			bad = errors.New("twice")
			return
		}
		out[key] = v
	})
	if err != nil {
		return nil, err
	}
	return out, bad
}
