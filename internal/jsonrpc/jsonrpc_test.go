package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestParseClient: client messages are read exactly as servers read them.
// Without parseClient (encoding/json, as parseMessage reads), every refused
// line below decodes without error and with a method or tool name other
// than the one the server reads.
func TestParseClient(t *testing.T) {
	const call = `"method":"tools/call"`
	for _, tc := range []struct {
		line string
		code int // 0: accepted
	}{
		// The envelope: members the host reads appear once, in their case.
		{`{"jsonrpc":"2.0","id":1,` + call + `,"Method":"ping","params":{"name":"slow_write","arguments":{}}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"Method":"ping",` + call + `,"params":{"name":"slow_write","arguments":{}}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"slow_write"}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"method":"ping","params":{"name":"slow_write"}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"\u006dethod":"ping",` + call + `,"params":{"name":"slow_write"}}`, -32600}, // an escaped name is the same name
		{`{"jsonrpc":"2.0","id":1,"\u004dethod":"ping",` + call + `,"params":{"name":"slow_write"}}`, -32600}, // "Method"
		{`{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","Params":{}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"params":{}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"error":{},"ERROR":{}}`, -32600},
		{`{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, -32600},
		// Ids JSON-RPC does not allow.
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":false,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"result":{}}`, -32600},
		// tools/call params: an object whose name is a non-empty string,
		// each member read once and in its case.
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"slow_write","Name":0,"arguments":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"slow_write","NAME":"version","arguments":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"NAME":"version","name":"slow_write","arguments":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"slow_write","name":"version"}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"version","name":"slow_write"}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"x","arguments":{},"Arguments":{"k":1}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"x","arguments":{},"arguments":{"k":1}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"x","argument\u017f":{}}}`, -32602}, // ſ folds to s
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"x","_meta":{},"_META":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":0}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":""}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"arguments":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":null}}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":["slow_write"]}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":"slow_write"}`, -32602},
		{`{"jsonrpc":"2.0","id":1,` + call + `}`, -32602},

		// Accepted.
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"slow_write","arguments":{"key":"k","Key":"K"},"_meta":{"progressToken":1}}}`, 0},
		{`{"jsonrpc":"2.0","id":1,` + call + `,"params":{"name":"x","extra":1,"EXTRA":2,"extra":3}}`, 0}, // members the host does not read
		{`{"jsonrpc":"2.0","id":1,"method":"ping","foo":1,"FOO":2}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Name":0,"NAME":"x"}}`, 0}, // only tools/call's params are read
		{`{"jsonrpc":"2.0",` + call + `,"params":{"Name":0}}`, 0},                            // a notification is not a call
		{`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`, 0},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":-3,"method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":1.5e3,"method":"ping"}`, 0},
		{`{"jsonrpc":"2.0","id":0,"result":{}}`, 0},
		{`{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"m"}} `, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "  \t", 0},
		// RFC 8259 §2: space, tab and CR may precede the object too.
		{" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0},
		{"\t\r {\"jsonrpc\":\"2.0\",\"id\":1," + call + ",\"params\":{\"name\":\"x\"}}\r", 0},
		{" {\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", -32600},
	} {
		m, err := ParseClient([]byte(tc.line))
		var pe *ProtocolError
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.line, err)
		case tc.code == 0 && m == nil:
			t.Errorf("%s: no message", tc.line)
		case tc.code != 0 && !errors.As(err, &pe):
			t.Errorf("%s: got error %v, want a ProtocolError %d", tc.line, err, tc.code)
		case tc.code != 0 && pe.Code != tc.code:
			t.Errorf("%s: got code %d (%s), want %d", tc.line, pe.Code, pe.Msg, tc.code)
		}
	}

	// Not JSON-RPC at all: an error, but not a ProtocolError, so the host
	// answers with a parse error.
	for _, bad := range []string{``, " \t\r", " [] ", "\v{}", `[]`, `"x"`, `{"id":1`, `{"id":1} {"id":2}`, `{"id":1}x`, `{"id":1}]`} {
		_, err := ParseClient([]byte(bad))
		var pe *ProtocolError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a parse error", bad, err)
		}
	}

	// What the host reads of an accepted message.
	m, err := ParseClient([]byte(" \t" + `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"version"}}` + "\r"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != "tools/call" || string(m.ID) != "7" || string(m.Params) != `{"name":"version"}` || !m.IsRequest() {
		t.Errorf("got method %q id %s params %s request %v", m.Method, m.ID, m.Params, m.IsRequest())
	}
	m, err = ParseClient([]byte(`{"jsonrpc":"2.0","id":"r","result":{"x":1}}`))
	if err != nil || !m.IsResponse() || !m.HasResult || m.HasError {
		t.Errorf("response: %+v, %v", m, err)
	}
	// A refused tools/call keeps its id, for the error.
	m, err = ParseClient([]byte(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"a","Name":0}}`))
	if err == nil || m == nil || string(m.ID) != `"c"` {
		t.Errorf("refused call: message %+v, error %v: want the id kept", m, err)
	}
}

// TestStrictObject: member names match exactly; a watched member appears
// once and in no other case; nothing follows the object.
func TestStrictObject(t *testing.T) {
	watch := []string{"method", "name"}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"method":"a","name":"b","other":1}`, true},
		{` {"method":"a"} ` + "\n", true},
		{`{}`, true},
		{`{"other":1,"other":2,"OTHER":3}`, true}, // not watched
		{`{"method":"a","Method":"b"}`, false},
		{`{"Method":"b"}`, false},
		{`{"mEtHoD":"b"}`, false},
		{`{"NAME":"b"}`, false},
		{`{"method":"a","method":"b"}`, false},
		{`{"name":"a","x":{"name":1},"name":"b"}`, false},
		{`{"\u006eame":"a","name":"b"}`, false},
		{`{"method":"a"}{"method":"b"}`, false},
		{`{"method":"a"} {}`, false},
		{`{"method":"a"}x`, false},
		{`{"method":"a"}]`, false},
		{`{"method":"a"},`, false},
		{`[{"method":"a"}]`, false},
		{`"method"`, false},
		{`null`, false},
		{``, false},
		{`{"method":"a"`, false},
	} {
		var got strictMembers
		err := strictObject([]byte(tc.in), watch, &got)
		if tc.ok && err != nil {
			t.Errorf("%q: %v", tc.in, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%q: accepted as %q", tc.in, got.val)
		}
	}
	// Watched members are kept by exact name, values as written; nested
	// objects are not looked into.
	var got strictMembers
	if err := strictObject([]byte(`{"name":"v","Other":{"name":1,"NAME":2},"n":[1, 2]}`), watch, &got); err != nil {
		t.Fatal(err)
	}
	if got.found[0] || !got.found[1] || string(got.val[1]) != `"v"` {
		t.Errorf("got %q %v", got.val, got.found)
	}
	// Without a watch list, case variants and duplicates are members like
	// any other.
	if err := strictObject([]byte(`{"a":1,"A":2,"a":3}`), nil, &got); err != nil {
		t.Errorf("unwatched: %v", err)
	}
}

// TestIDKey: ids are matched by value, as peers re-encode them; strings
// and numbers never share a key.
func TestIDKey(t *testing.T) {
	same := [][]string{
		{`"\u0041"`, `"A"`},
		{`"a\/b"`, `"a/b"`},
		{`1`, `1.0`, `1e0`, `1E0`, `10e-1`, `0.1e1`, `1.000`, ` 1 `},
		{`100`, `1e2`, `100.0`},
		{`-3`, `-3.0`, `-0.3e1`},
		{`0`, `-0`, `0.0`},
	}
	for _, group := range same {
		for _, id := range group[1:] {
			if IDKey(json.RawMessage(group[0])) != IDKey(json.RawMessage(id)) {
				t.Errorf("IDKey(%s) = %q, IDKey(%s) = %q: want equal", group[0], IDKey(json.RawMessage(group[0])), id, IDKey(json.RawMessage(id)))
			}
		}
	}
	differ := [][2]string{
		{`1`, `"1"`},
		{`1`, `"n1"`}, // the key of a number must not be a string's
		{`"1"`, `"s1"`},
		{`1`, `2`},
		{`1.5`, `1`},
		{`9007199254740993`, `9007199254740992`}, // by exact value, not float64
		{`"a"`, `"A"`},
		{`null`, `"null"`},
		{`"1.0"`, `"1"`},
	}
	for _, d := range differ {
		if IDKey(json.RawMessage(d[0])) == IDKey(json.RawMessage(d[1])) {
			t.Errorf("IDKey(%s) == IDKey(%s) = %q: want different", d[0], d[1], IDKey(json.RawMessage(d[0])))
		}
	}
	if k := IDKey(nil); k != "" {
		t.Errorf("IDKey(nil) = %q, want empty", k)
	}
}

// TestReplaceID: a server→client request travels under a host id
// and the client's answer returns under the server's own id; nothing else
// in the line changes.
func TestReplaceID(t *testing.T) {
	out, err := ReplaceID([]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"x":[1,"id"]}}`), json.RawMessage(`"mcpepoch:E:s1"`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if string(got["id"]) != `"mcpepoch:E:s1"` || string(got["method"]) != `"sampling/createMessage"` || string(got["params"]) != `{"x":[1,"id"]}` || len(got) != 4 {
		t.Errorf("got %s", out)
	}
	if _, err := ReplaceID([]byte(`[1]`), json.RawMessage(`1`)); err == nil {
		t.Error("ReplaceID of an array: no error")
	}
}

// Numeric ids a server cannot echo exactly are refused up front, and huge
// exponents are never expanded.
func TestParseClientNumericIDs(t *testing.T) {
	for _, id := range []string{`1`, `1.0`, `5.01e2`, `-0`, `9007199254740992`, `-9007199254740992`} {
		if _, err := ParseClient([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)); err != nil {
			t.Errorf("id %s refused: %v", id, err)
		}
	}
	for _, id := range []string{`0.5`, `1e400`, `1e1000000000`, `12345678901234567890123`, `9007199254740993`} {
		_, err := ParseClient([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Code != -32600 {
			t.Errorf("id %s: err %v, want -32600", id, err)
		}
	}
	if k := IDKey(json.RawMessage(`1e1000000000`)); k != "r1e1000000000" {
		t.Errorf("idKey of a huge exponent = %q, want the raw form", k)
	}
}

func TestMessageEnvelope(t *testing.T) {
	for _, tc := range []struct {
		line                string
		req, note, response bool
	}{
		{`{"jsonrpc":"2.0","id":0,"method":"initialize"}`, true, false, false},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, true, false, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false, true, false},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, false, true, false},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, false, false, true},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}`, false, false, true},
	} {
		m, err := Parse([]byte(tc.line))
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if m.IsRequest() != tc.req || m.IsNotification() != tc.note || m.IsResponse() != tc.response {
			t.Errorf("%s: request %v notification %v response %v", tc.line, m.IsRequest(), m.IsNotification(), m.IsResponse())
		}
	}
	for _, bad := range []string{``, " \t\r", " [] ", "\v{}", `[]`, `"x"`, `{"id":`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if IDKey([]byte(`1`)) == IDKey([]byte(`"1"`)) {
		t.Error(`ids 1 and "1" share a key`)
	}
}
