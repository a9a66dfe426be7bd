package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// collect runs readLines over in and returns each line, or "OVER:<id>" for
// an over-long one.
func collect(in io.Reader, max int) []string {
	var out []string
	readLines(in, max, func(line []byte, over *overflow) {
		if over != nil {
			out = append(out, "OVER:"+string(over.id()))
			return
		}
		out = append(out, string(line))
	})
	return out
}

func TestReadLines(t *testing.T) {
	const max = 10
	in := "a\nbb\r\n\n\n" + // CRLF trimmed, empty lines skipped
		"0123456789\n" + // exactly max: passed
		"01234567890\n" + // max+1: over
		`{"id":5,"x":"yyyyyyyyyy"}` + "\n" + // over, id found
		"after\n" +
		"tail" // no final newline
	want := []string{"a", "bb", "0123456789", "OVER:", "OVER:5", "after", "tail"}
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one-byte": iotest.OneByteReader(strings.NewReader(in)),
	} {
		if got := collect(r, max); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

// Lines longer than the reader's 64 KiB buffer come through whole, or as
// one overflow, and the next line is intact.
func TestReadLinesLong(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":"big","result":"` + strings.Repeat("x", 200<<10) + `"}`
	in := long + "\n" + `{"id":2}` + "\n"
	if got := collect(strings.NewReader(in), 1<<20); len(got) != 2 || got[0] != long || got[1] != `{"id":2}` {
		t.Errorf("under the limit: got %d lines (first %d bytes)", len(got), len(got[0]))
	}
	if got := collect(strings.NewReader(in), 100<<10); !slices.Equal(got, []string{`OVER:"big"`, `{"id":2}`}) {
		t.Errorf("over the limit: got %.100q", got)
	}
}

// Long lines handed over in the buffer they were read into (over
// readKeep), mixed with short ones, CRLF and LF, come through whole
// however the reads are cut; each is fn's to keep and change (what fn
// writes into one never shows in a later one), and the newline still
// follows an LF line in place (withNewline).
func TestReadLinesHandsOverLongLines(t *testing.T) {
	var want []string
	var in strings.Builder
	for i, n := range []int{readKeep, 10, 5 << 20, readKeep + 1, 3, 1 << 20, readKeep + 100} {
		line := fmt.Sprintf(`{"id":%d,"result":"%s"}`, i, strings.Repeat(string(rune('a'+i)), n))
		want = append(want, line)
		in.WriteString(line)
		if i%2 == 1 {
			in.WriteString("\r")
		}
		in.WriteString("\n")
	}
	for name, r := range map[string]func() io.Reader{
		"whole":     func() io.Reader { return strings.NewReader(in.String()) },
		"1 MiB":     func() io.Reader { return &chunkReader{s: in.String(), n: 1 << 20} },
		"odd reads": func() io.Reader { return &chunkReader{s: in.String(), n: 77777} },
	} {
		// Kept: every line is intact once all are read.
		var kept [][]byte
		readLines(r(), 16<<20, func(line []byte, over *overflow) {
			if over != nil {
				t.Fatalf("%s: an overflow", name)
			}
			kept = append(kept, line)
			if i := len(kept) - 1; i%2 == 0 && !bytes.Equal(withNewline(line)[:len(line)+1], append([]byte(want[i]), '\n')) {
				t.Errorf("%s: line %d: no newline in place after it", name, i)
			}
		})
		// Changed: what fn writes into a line never shows in a later one.
		var got []string
		readLines(r(), 16<<20, func(line []byte, over *overflow) {
			got = append(got, string(line))
			for j := range line {
				line[j] = 'Z'
			}
		})
		if len(kept) != len(want) || len(got) != len(want) {
			t.Fatalf("%s: %d and %d lines, want %d", name, len(kept), len(got), len(want))
		}
		for i := range want {
			if string(kept[i]) != want[i] || got[i] != want[i] {
				t.Errorf("%s: line %d: kept %d bytes %.40q…, changed run %d bytes %.40q…; want %d bytes %.40q…",
					name, i, len(kept[i]), kept[i], len(got[i]), got[i], len(want[i]), want[i])
			}
		}
	}
}

// chunkReader reads s in reads of at most n bytes.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[k:]
	return k, nil
}

func TestOverflowID(t *testing.T) {
	pad := strings.Repeat("p", 3*overflowKeep)
	for _, tc := range []struct {
		msg, id string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"` + pad + `"}}`, `7`},
		{`{"id":-3,"jsonrpc":"2.0","result":{"a":"` + pad + `"}}`, `-3`},
		{` { "jsonrpc" : "2.0" , "id" : "a\"b" , "result":"` + pad + `"}`, `"a\"b"`},
		{`{"jsonrpc":"2.0","result":{"a":"` + pad + `"},"id":12}`, `12`},
		{`{"result":{"a":"` + pad + `"},"id":"z","jsonrpc":"2.0"}` + "  ", `"z"`},
		// Ids JSON forbids, or only the start of a number, are not read.
		{`{"jsonrpc":"2.0","id":007,"result":{"a":"` + pad + `"}}`, ``},
		{`{"jsonrpc":"2.0","id":"a` + "\t" + `b","result":{"a":"` + pad + `"}}`, ``},
		{`{"jsonrpc":"2.0","result":{"a":"` + pad + `"},"id":"\q"}`, ``},
		{`{"jsonrpc":"2.0","id":12.5,"result":{"a":"` + pad + `"}}`, ``},
		// An id inside params is not the message's.
		{`{"jsonrpc":"2.0","method":"x","params":{"id":5,"a":"` + pad + `"}}`, ``},
		{`{"jsonrpc":"2.0","method":"x","params":{"a":"` + pad + `","id":5}}`, ``},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"` + pad + `"}}`, ``},
	} {
		got := collect(strings.NewReader(tc.msg+"\n"), 2*overflowKeep)
		if want := []string{"OVER:" + tc.id}; !slices.Equal(got, want) {
			t.Errorf("%.60s…: got %q, want %q", tc.msg, got, want)
		}
	}
}

// TestAdvertiseListChanged: each list the server declared says
// listChanged: true, nothing is added that it did not declare, and every
// other byte stays as the server wrote it.
func TestAdvertiseListChanged(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, version string
		caps                    serverCaps
	}{
		{"tools-empty",
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"<b>&</b>"}}`,
			`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"<b>&</b>"}}`,
			"2025-11-25", serverCaps{tools: true}},
		{"no-capabilities",
			`{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2024-11-05"}}`,
			`{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2024-11-05"}}`,
			"2024-11-05", serverCaps{}},
		{"tools-null",
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":null}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":null}}}`,
			"2025-06-18", serverCaps{}},
		{"listChanged-false",
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false,"x":1}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true,"x":1}}}}`,
			"2025-11-25", serverCaps{tools: true}},
		{"prompts-and-resources-only",
			`{"result":{"capabilities":{"prompts":{},"resources":{"subscribe":true,"listChanged":true}},"protocolVersion":"2025-11-25"},"jsonrpc":"2.0","id":1}`,
			`{"result":{"capabilities":{"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},"protocolVersion":"2025-11-25"},"jsonrpc":"2.0","id":1}`,
			"2025-11-25", serverCaps{prompts: true, resources: true}},
		{"discover",
			`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"ttlMs":0}}`,
			"", serverCaps{tools: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, caps, version, err := advertiseListChanged([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if version != tc.version || caps != tc.caps {
				t.Errorf("version %q caps %+v, want %q %+v", version, caps, tc.version, tc.caps)
			}
			if string(out) != tc.want {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"capabilities":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":true}}}`,
	} {
		if _, _, _, err := advertiseListChanged([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestPrivateID(t *testing.T) {
	for id, want := range map[string]bool{
		`"mcpepoch:1"`: true, `"mcpepoch:"`: true, `"mcpepoch"`: false, `"x:mcpepoch:1"`: false, `1`: false, `null`: false,
	} {
		if got := isPrivateID(json.RawMessage(id)); got != want {
			t.Errorf("isPrivateID(%s) = %v", id, got)
		}
	}
}

// checkHost returns a Host whose current child and catalog are tools, as
// after a restart.
func checkHost(t *testing.T, tools ...string) *Host {
	t.Helper()
	h := New(Options{})
	h.child = &child{epoch: epoch.Epoch("01EPOCH")}
	var raw []json.RawMessage
	for _, tl := range tools {
		raw = append(raw, json.RawMessage(tl))
	}
	cat, err := newCatalog(raw)
	if err != nil {
		t.Fatal(err)
	}
	h.catalog, h.tools = cat, compileTools(cat, nil)
	return h
}

// toolErrorResult is what check returns for a refusal answered as a tool
// result with isError true, not a JSON-RPC error.
const toolErrorResult = 1

// check runs checkCallLocked for tools/call name args and returns the code
// of the refusal (toolErrorResult for an isError result), 0 to forward,
// and the refusal's data (error.data, or the result's _meta[MetaRefusal]).
func check(t *testing.T, h *Host, name, args string) (int, map[string]json.RawMessage) {
	t.Helper()
	params := fmt.Sprintf(`{"name":%q`, name)
	if args != "" {
		params += `,"arguments":` + args
	}
	params += "}"
	m, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":` + params + `}`))
	if err != nil {
		t.Fatal(err)
	}
	var p callParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	out := h.checkCallLocked(m, &p)
	if out == nil {
		return 0, nil
	}
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int                        `json:"code"`
			Data map[string]json.RawMessage `json:"data"`
		} `json:"error"`
		Result struct {
			IsError bool                                  `json:"isError"`
			Meta    map[string]map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if string(resp.ID) != "9" {
		t.Errorf("refusal id %s, want 9", resp.ID)
	}
	if resp.Error == nil {
		if !resp.Result.IsError {
			t.Fatalf("refusal %s is neither an error nor an isError result", out)
		}
		return toolErrorResult, resp.Result.Meta[MetaRefusal]
	}
	return resp.Error.Code, resp.Error.Data
}

const (
	publishV1 = `{"name":"publish","inputSchema":{"type":"object","properties":{"branch":{"type":"string"},"target":{"type":"string","default":"preview"}},"required":["branch"]}}`
	publishV2 = `{"name":"publish","inputSchema":{"type":"object","properties":{"branch":{"type":"string"},"target":{"type":"string","default":"production"}},"required":["branch"]}}`
	echo      = `{"name":"echo","inputSchema":{"type":"object"}}`
	remoteRef = `{"name":"remote","inputSchema":{"$ref":"https://example.com/schema.json"}}`
)

func TestCheckCall(t *testing.T) {
	t.Run("catalog-unknown", func(t *testing.T) {
		h := New(Options{})
		h.child = &child{epoch: "E"}
		if code, _ := check(t, h, "anything", `{}`); code != 0 {
			t.Errorf("code %d, want the call forwarded", code)
		}
	})

	t.Run("unknown-tool", func(t *testing.T) {
		h := checkHost(t, publishV1, echo)
		code, data := check(t, h, "gone", `{}`)
		if code != -32602 || string(data["tools"]) != `["publish","echo"]` || string(data["tool"]) != `"gone"` {
			t.Errorf("code %d data %v", code, data)
		}
	})

	t.Run("invalid-arguments", func(t *testing.T) {
		h := checkHost(t, publishV1)
		for _, args := range []string{`{}`, ``, `null`, `{"branch":1}`} {
			code, data := check(t, h, "publish", args)
			if code != toolErrorResult || !bytes.Contains(data["tool"], []byte(`"required":["branch"]`)) || string(data["defaults"]) != `{"target":"preview"}` {
				t.Errorf("arguments %q: code %d data %v", args, code, data)
			}
		}
		if code, _ := check(t, h, "publish", `{"branch":"main"}`); code != 0 {
			t.Errorf("valid call: code %d", code)
		}
	})

	t.Run("definition-changed", func(t *testing.T) {
		h := checkHost(t, publishV2, echo)
		h.noteListedLocked(nil, json.RawMessage(`{"tools":[`+publishV1+`,`+echo+`]}`)) // listed at v1
		code, data := check(t, h, "publish", `{"branch":"main"}`)
		if code != CodeToolChanged || string(data["defaults"]) != `{"target":"production"}` {
			t.Errorf("first call after the change: code %d data %v", code, data)
		}
		if code, _ := check(t, h, "publish", `{"branch":"main"}`); code != 0 {
			t.Errorf("the identical call after the refusal: code %d, want it forwarded", code)
		}
		if code, _ := check(t, h, "echo", `{"a":1}`); code != 0 {
			t.Errorf("an unchanged tool: code %d", code)
		}
	})

	t.Run("listed-current", func(t *testing.T) {
		h := checkHost(t, publishV2)
		// Key order and spacing do not make a definition different.
		h.noteListedLocked(nil, json.RawMessage(`{"tools":[{"inputSchema":{"required":["branch"],"type":"object","properties":{"target":{"default":"production","type":"string"},"branch":{"type":"string"}}},  "name":"publish"}]}`))
		if code, _ := check(t, h, "publish", `{"branch":"main"}`); code != 0 {
			t.Errorf("code %d, want the call forwarded", code)
		}
	})

	t.Run("schema-not-compiled", func(t *testing.T) {
		h := checkHost(t, remoteRef)
		if h.tools["remote"].schemaErr == nil {
			t.Fatal("a remote $ref compiled: the host must not fetch it")
		}
		if code, _ := check(t, h, "remote", `{"anything":true}`); code != 0 {
			t.Errorf("code %d, want the call forwarded unchecked", code)
		}
	})
}

// A number RFC 8785 cannot canonicalize (beyond float64) still gives the
// catalog a revision, one that changes with the tools.
func TestCatalogRevisionWithHugeNumber(t *testing.T) {
	a, err := newCatalog([]json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object","maximum":1e400}}`)})
	if err != nil {
		t.Fatalf("newCatalog: %v", err)
	}
	b, err := newCatalog([]json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object","maximum":1e401}}`)})
	if err != nil {
		t.Fatalf("newCatalog: %v", err)
	}
	if a.Revision == "" || a.Revision == b.Revision {
		t.Errorf("revisions %q and %q: want two different ones", a.Revision, b.Revision)
	}
}

// A reloader's replaced process is seen; a short-lived helper, or one
// that ends without a successor of its name, is not.
func TestReplacedProcess(t *testing.T) {
	now := time.Now()
	ended := map[string]time.Time{}
	// node 10 ran for two looks, then node 11 took its place.
	if !replacedProcess(map[int]string{10: "node"}, map[int]string{10: "node"}, map[int]string{11: "node"}, ended, now) {
		t.Error("node 10 replaced by node 11: not seen")
	}
	ended = map[string]time.Time{}
	// git 20 was seen once (not stable), then git 21.
	if replacedProcess(map[int]string{}, map[int]string{20: "git"}, map[int]string{21: "git"}, ended, now) {
		t.Error("a short-lived git followed by another: taken for a reload")
	}
	// node 10 ended; a sh started, not a node.
	if replacedProcess(map[int]string{10: "node"}, map[int]string{10: "node"}, map[int]string{12: "sh"}, ended, now) {
		t.Error("node 10 ended and sh 12 started: taken for a reload")
	}
	// The successor shows up a look later, within the window.
	if !replacedProcess(map[int]string{}, map[int]string{12: "sh"}, map[int]string{12: "sh", 13: "node"}, ended, now.Add(time.Second)) {
		t.Error("node 13 a second after node 10 ended: not seen")
	}
	// The successor was seen forked by the shell before it exec'd: the
	// same pid, named sh a look ago, runs node now.
	ended = map[string]time.Time{"node": now}
	if !replacedProcess(map[int]string{}, map[int]string{14: "sh"}, map[int]string{14: "node"}, ended, now.Add(time.Second)) {
		t.Error("pid 14 seen as sh, then as node, a second after node 10 ended: not seen")
	}
}
