package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.jsonl and testdata/golden.head")

const goldenEpoch = "01JQ8Z5K2M7N4P6Q8R0S2T4V6W"

// goldenEvents are the three events of testdata/golden.jsonl.
func goldenEvents() []Event {
	return []Event{
		{Type: TypeServerStarted, Epoch: goldenEpoch, Fields: map[string]any{
			FieldEntry: "sha256:9e4c0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7",
			"command":  "node dist/server.js",
			"pid":      4242,
		}},
		{Type: TypeToolCalled, Epoch: goldenEpoch, Run: "run-1", Fields: map[string]any{
			FieldTool:       "read_file",
			FieldArgsDigest: ArgsDigest(json.RawMessage(`{ "path": "README.md", "limit": 10 }`)),
			"scopes":        []string{"fs.read"},
		}},
		{Type: TypeToolResult, Epoch: goldenEpoch, Run: "run-1", Fields: map[string]any{
			FieldTool:  "read_file",
			"is_error": false,
			"bytes":    uint64(18446744073709551615), // beyond 2^53: written as a string
			"note":     "café <ok> ✓",
		}},
	}
}

func goldenTimes() []time.Time {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	return []time.Time{t0, t0.Add(1250 * time.Millisecond), t0.Add(1300*time.Millisecond + 1)}
}

// fixedClock returns the times in order, then fails the test.
func fixedClock(t *testing.T, times []time.Time) func() time.Time {
	return func() time.Time {
		if len(times) == 0 {
			t.Fatal("clock called more often than expected")
		}
		now := times[0]
		times = times[1:]
		return now
	}
}

func TestGenesisPrev(t *testing.T) {
	if want := "sha256:" + strings.Repeat("0", 64); GenesisPrev != want {
		t.Fatalf("GenesisPrev = %q, want %q", GenesisPrev, want)
	}
	if err := checkDigest(GenesisPrev); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ Prev string }
	if err := json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &first); err != nil {
		t.Fatal(err)
	}
	if first.Prev != GenesisPrev {
		t.Fatalf("first record's prev = %q, want GenesisPrev", first.Prev)
	}
}

// TestGolden writes the golden events through a Log with a fixed clock and
// compares the log and head byte for byte with testdata.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, &Options{Now: fixedClock(t, goldenTimes())})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range goldenEvents() {
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"audit.jsonl", "audit.head"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", strings.Replace(name, "audit", "golden", 1))
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", name, golden, got, want)
		}
	}
}

// TestGoldenHashes recomputes the chain of testdata/golden.jsonl without
// the package's code: encoding/json, jcs.Transform and SHA-256 only.
func TestGoldenHashes(t *testing.T) {
	b, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("golden.jsonl has %d lines, want 3", len(lines))
	}
	prev := "sha256:" + strings.Repeat("0", 64)
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["prev"] != prev {
			t.Errorf("line %d: prev = %v, want %s", i+1, m["prev"], prev)
		}
		if m["seq"] != float64(i+1) || m["v"] != float64(1) {
			t.Errorf("line %d: seq %v v %v", i+1, m["seq"], m["v"])
		}
		hash := m["hash"].(string)
		delete(m, "hash")
		body, _ := json.Marshal(m)
		canon, err := jcs.Transform(body)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(append([]byte(prev), canon...))
		if want := "sha256:" + hex.EncodeToString(sum[:]); hash != want {
			t.Errorf("line %d: hash %s, recomputed %s", i+1, hash, want)
		}
		prev = hash
	}

	// The first record, spelled out: members sorted, no spaces, the time
	// with nine fractional digits.
	first := `{"command":"node dist/server.js",` +
		`"entry":"sha256:9e4c0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7",` +
		`"epoch":"01JQ8Z5K2M7N4P6Q8R0S2T4V6W","pid":4242,` +
		`"prev":"sha256:0000000000000000000000000000000000000000000000000000000000000000",` +
		`"seq":1,"time":"2025-03-01T10:00:00.000000000Z","type":"server_started","v":1}`
	sum := sha256.Sum256([]byte(GenesisPrev + first))
	want := strings.Replace(first, `"pid":4242,`, `"hash":"sha256:`+hex.EncodeToString(sum[:])+`","pid":4242,`, 1)
	if lines[0] != want {
		t.Errorf("first line\n got %s\nwant %s", lines[0], want)
	}
	// Large integers become strings; small ones stay numbers.
	if !strings.Contains(lines[2], `"bytes":"18446744073709551615"`) {
		t.Errorf("third line lacks the large integer as a string: %s", lines[2])
	}

	rep, err := Verify("testdata/golden.jsonl", "testdata/golden.head")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Warnings) > 0 || rep.Records != 3 || rep.Last.Hash != prev {
		t.Fatalf("Verify(golden) = %+v", rep)
	}
}

func TestArgsDigest(t *testing.T) {
	a := ArgsDigest(json.RawMessage(`{"b":[1,2.0,"x"],"a":{"d":true,"c":null}}`))
	b := ArgsDigest(json.RawMessage(" {\n \"a\": {\"c\": null, \"d\": true}, \"b\": [1, 2, \"x\"]}\n"))
	if a != b {
		t.Errorf("equal arguments, different digests: %s %s", a, b)
	}
	sum := sha256.Sum256([]byte(`{"a":{"c":null,"d":true},"b":[1,2,"x"]}`))
	if want := "sha256:" + hex.EncodeToString(sum[:]); a != want {
		t.Errorf("ArgsDigest = %s, want %s", a, want)
	}
	if c := ArgsDigest(json.RawMessage(`{"a":1}`)); c == a {
		t.Error("different arguments, same digest")
	}
	empty := sha256.Sum256([]byte("{}"))
	for _, raw := range []string{"", "  ", "{}", "{ }"} {
		if got := ArgsDigest(json.RawMessage(raw)); got != "sha256:"+hex.EncodeToString(empty[:]) {
			t.Errorf("ArgsDigest(%q) = %s, want the digest of {}", raw, got)
		}
	}
}

func TestLargeIntegersBecomeStrings(t *testing.T) {
	l, path := openTemp(t)
	_, err := l.Append(Event{Type: TypeToolResult, Fields: map[string]any{
		"huge":   uint64(1 << 63),
		"edge":   int64(1 << 53),
		"over":   int64(1<<53 + 1),
		"neg":    int64(-(1<<53 + 1)),
		"small":  42,
		"float":  1.5,
		"nested": map[string]any{"list": []any{int64(1 << 60), 7}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	f := recs[0].Fields
	want := map[string]any{
		"huge":   "9223372036854775808",
		"edge":   json.Number("9007199254740992"),
		"over":   "9007199254740993",
		"neg":    "-9007199254740993",
		"small":  json.Number("42"),
		"float":  json.Number("1.5"),
		"nested": map[string]any{"list": []any{"1152921504606846976", json.Number("7")}},
	}
	gotJSON, _ := json.Marshal(f)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("fields read back\n got %s\nwant %s", gotJSON, wantJSON)
	}
	for k, v := range want {
		if s, ok := v.(string); ok && f[k] != s {
			t.Errorf("field %s = %#v (%T), want the string %q", k, f[k], f[k], s)
		}
	}
	mustVerify(t, path)
}

func TestAppendRejects(t *testing.T) {
	l, path := openTemp(t)
	for _, ev := range []Event{
		{Type: ""},
		{Type: "Tool Called"},
		{Type: TypeLogRecovered},
		{Type: TypeToolCalled, Fields: map[string]any{"seq": 3}},
		{Type: TypeToolCalled, Fields: map[string]any{"hash": "x"}},
		{Type: TypeToolCalled, Fields: map[string]any{"": "x"}},
		{Type: TypeToolCalled, Fields: map[string]any{"f": func() {}}},
		{Type: TypeToolCalled, Fields: map[string]any{"pad": strings.Repeat("x", MaxRecordSize)}},
	} {
		if _, err := l.Append(ev); err == nil {
			t.Errorf("Append(%.60v) succeeded", ev)
		} else if !strings.HasPrefix(err.Error(), "audit: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("rejected events wrote to the log: %v %v", fi.Size(), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %v, want 0600", fi.Mode().Perm())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != ErrClosed {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}

func TestRecordJSON(t *testing.T) {
	recs, err := Read("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, r := range recs {
		if r.Line != i+1 {
			t.Errorf("record %d: Line = %d", i, r.Line)
		}
		got, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != lines[i] {
			t.Errorf("Marshal(record %d)\n got %s\nwant %s", i+1, got, lines[i])
		}
		var back Record
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if back.Hash != r.Hash || back.Seq != r.Seq || !back.Time.Equal(r.Time) {
			t.Errorf("Unmarshal(Marshal(record %d)) = %+v", i+1, back)
		}
	}
}
