package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// referenceSeal is the record encoder by way of reflection: json.Marshal
// of the fields, integers beyond ±2^53 turned into strings, then
// jcs.Transform of the whole record (RFC 8785). sealRecord must give the
// same bytes.
func referenceSeal(prev string, seq int64, t time.Time, ev Event) ([]byte, error) {
	if err := ev.check(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	if len(ev.Fields) > 0 {
		b, err := json.Marshal(ev.Fields)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		for k, v := range m {
			m[k] = referenceExact(v)
		}
	}
	m["v"] = Version
	m["seq"] = seq
	m["time"] = t.UTC().Format(TimeLayout)
	m["type"] = ev.Type
	if ev.Epoch != "" {
		m["epoch"] = ev.Epoch
	}
	if ev.Run != "" {
		m["run"] = ev.Run
	}
	m["prev"] = prev
	body, err := canonical(m)
	if err != nil {
		return nil, err
	}
	m["hash"] = chainHash(prev, body)
	line, err := canonical(m)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

func referenceExact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = referenceExact(e)
		}
	case []any:
		for i, e := range x {
			x[i] = referenceExact(e)
		}
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return x
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return s
		}
	}
	return v
}

// canonicalCases are field values of every type the encoder handles
// itself, and some it hands to encoding/json.
var canonicalCases = []map[string]any{
	nil,
	{"tool": "read_file", "args_digest": "hmac-sha256:00ff", "grant": "g1"},
	{"is_error": false, "ok": true, "none": nil, "duration_ms": "12"},
	{"n": 1 << 53, "big": 1<<53 + 1, "neg": -(1<<53 + 1), "i64": int64(math.MaxInt64), "u64": uint64(math.MaxUint64), "i32": int32(-7), "u": uint(3), "u32": uint32(9)},
	{"f": 1.5, "f0": 0.0, "fneg": math.Copysign(0, -1), "fbig": 1e20, "fhuge": 1e21, "ftiny": 1e-7, "f32": float32(0.1), "fint": 3.0},
	{"num": json.Number("12"), "numf": json.Number("1.50"), "nume": json.Number("1E3"), "numbig": json.Number("123456789012345678901"), "numneg0": json.Number("-0")},
	{"changed": []string{"entry", "deps (gone)"}, "nilslice": []string(nil), "empty": []string{}},
	{"nested": map[string]any{"b": []any{1, "x", map[string]any{"z": true, "a": nil}}, "a": map[string]string{"k": "v"}}},
	{"torn": []TornLine{{Offset: 10, Bytes: 3, Digest: "sha256:ab"}}, "notorn": []TornLine(nil)},
	{"esc": "quote\" back\\ nl\n tab\t cr\r bs\b ff\f nul\x00 us\x1f del\x7f c1\u0085 ls\u2028 <&> rtl\u202e"},
	{"bad": "a\xffb\xc3", "é": 1, "z": 2, "\U0001F600": 3, "\uFB01": 4, "A": 5, "\u00e9a": 6},
	{"struct": struct {
		A int    `json:"a"`
		B string `json:"b"`
	}{1, "x"}, "rawmsg": json.RawMessage(`{"y":1,"x":[2.50,1e400]}`)},
}

func TestCanonicalMatchesJCS(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 0, 0, 123, time.UTC)
	for i, f := range canonicalCases {
		for _, ev := range []Event{
			{Type: TypeToolCalled, Fields: f},
			{Type: TypeToolResult, Epoch: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Run: "r\u00e91", Fields: f},
		} {
			compareSeal(t, fmt.Sprint("case ", i), GenesisPrev, int64(i+1), at, ev)
		}
	}
}

// compareSeal checks that sealRecord and referenceSeal agree on ev: the
// same bytes, or both an error.
func compareSeal(t *testing.T, name, prev string, seq int64, at time.Time, ev Event) {
	t.Helper()
	want, werr := referenceSeal(prev, seq, at, ev)
	_, got, gerr := sealRecord(nil, prev, seq, at, ev)
	switch {
	case werr != nil && gerr != nil:
	case werr != nil || gerr != nil:
		t.Errorf("%s: reference error %v, encoder error %v", name, werr, gerr)
	case !bytes.Equal(got.line, want):
		t.Errorf("%s:\nencoder   %s\nreference %s", name, got.line, want)
	case got.hash() != strings.TrimSuffix(strings.SplitAfter(string(want), `"hash":"`)[1][:71], `"`):
		t.Errorf("%s: hash %s not the one in the line", name, got.hash())
	}
}

// FuzzCanonicalMatchesJCS builds events from arbitrary strings and
// numbers and checks that the record encoder writes exactly the bytes
// json.Marshal and jcs.Transform write.
func FuzzCanonicalMatchesJCS(f *testing.F) {
	f.Add("tool", "read_file", "k2", "v\x00\"\\", int64(5), 1.5, "12")
	f.Add("\U0001F600", "\uFFFF", "\uE000", "a\xffb", int64(1<<53+1), math.Copysign(0, -1), "1e400")
	f.Add("é", "<&>\u2028", "z", "", int64(math.MinInt64), 1e21, "-0.0e+01")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n int64, fl float64, num string) {
		if k1 == "" || k2 == "" || isReserved(k1) || isReserved(k2) || validKey(k1) == validKey(k2) {
			return // refused alike, or keys that collide once made valid UTF-8
		}
		if math.IsNaN(fl) || math.IsInf(fl, 0) {
			return // json.Marshal refuses them; so does the encoder
		}
		fields := map[string]any{
			k1:  v1,
			k2:  []any{v2, n, fl, map[string]any{v1: n, v2 + "x": []string{k1, k2}}},
			"n": json.Number(num),
		}
		if validKey(v1) == validKey(v2+"x") {
			delete(fields[k2].([]any)[3].(map[string]any), v1)
		}
		if !validNumber(num) {
			fields["n"] = num
		}
		compareSeal(t, "fuzz", GenesisPrev, 3, time.Unix(0, n).UTC(), Event{Type: TypeToolCalled, Epoch: v2, Run: k1, Fields: fields})
	})
}

func BenchmarkSealRecord(b *testing.B) {
	ev := Event{Type: TypeToolCalled, Epoch: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Run: "01JQ8Z5K2M7N4P6Q8R0S2T4V6X",
		Fields: map[string]any{FieldTool: "echo", FieldArgsDigest: "hmac-sha256:9e4c0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7", "grant": "g-1"}}
	at := time.Now()
	b.Run("encoder", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		var e encoder
		for i := 0; i < b.N; i++ {
			if _, _, err := e.seal(buf[:0], GenesisPrev, int64(i+1), at, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := referenceSeal(GenesisPrev, int64(i+1), at, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncoderReusedMatchesJCS seals a chain of records of many kinds
// with one encoder, as a Log does, kinds recurring, more of them than the
// encoder keeps layouts for, some with the same names gathered in another
// order or one name more: every line must still be the reference's, and
// chained to the line before.
func TestEncoderReusedMatchesJCS(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 0, 0, 123, time.UTC)
	kinds := []Event{
		{Type: TypeToolResult, Epoch: "e1", Run: "r1", Attrs: []Attr{{FieldTool, "echo"}, {"is_error", false}, {"duration_ms", "0"}}},
		{Type: TypeToolCalled, Epoch: "e1", Run: "r1", Attrs: []Attr{{FieldTool, "echo"}, {FieldArgsDigest, "hmac-sha256:00"}}},
		{Type: TypeToolCalled, Epoch: "e1", Run: "r1", Attrs: []Attr{{FieldArgsDigest, "hmac-sha256:00"}, {FieldTool, "echo"}}},
		{Type: TypeToolCalled, Epoch: "e1", Attrs: []Attr{{FieldTool, "echo"}, {FieldArgsDigest, "hmac-sha256:00"}}},
		{Type: TypeToolCalled, Epoch: "e1", Run: "r1", Attrs: []Attr{{FieldTool, "echo"}, {FieldArgsDigest, "hmac-sha256:00"}, {"grant", "g1"}}},
		{Type: TypeToolCalled, Run: "r1", Attrs: []Attr{{"a", 1}, {"z", 2}}},
		{Type: TypeToolCalled, Run: "r1", Attrs: []Attr{{"a", 1}, {"zz", 2}}},
		{Type: TypeToolCalled, Attrs: []Attr{{"\xff", 1}}},
	}
	for i, f := range canonicalCases {
		if i%3 == 0 {
			kinds = append(kinds, Event{Type: TypeServerStarted, Epoch: "e2", Fields: f})
		}
	}
	var e encoder
	prev := GenesisPrev
	e.prev = append(e.prev[:0], prev...)
	for seq := int64(1); seq <= 200; seq++ {
		ev := kinds[(seq*7)%int64(len(kinds))]
		ref := ev // referenceSeal knows Fields only
		if ev.Attrs != nil {
			ref.Fields, ref.Attrs = map[string]any{}, nil
			for _, a := range ev.Attrs {
				ref.Fields[a.Key] = a.Value
			}
		}
		want, err := referenceSeal(prev, seq, at, ref)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := e.sealNext(nil, seq, at, ev)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if !bytes.Equal(got.line, want) {
			t.Fatalf("seq %d:\nencoder   %s\nreference %s", seq, got.line, want)
		}
		prev = got.hash()
		if string(e.prev) != prev {
			t.Fatalf("seq %d: next prev %s, want %s", seq, e.prev, prev)
		}
	}
}
