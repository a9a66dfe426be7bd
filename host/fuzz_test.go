package host

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// readAll is collect keeping overflows apart: the lines, and the id of each
// over-long line.
func readAll(t *testing.T, data []byte, max int, oneByte bool) (lines []string, ids []string) {
	var in io.Reader = bytes.NewReader(data)
	if oneByte {
		in = iotest.OneByteReader(in)
	}
	readLines(in, max, func(line []byte, over *overflow) {
		if over != nil {
			id := over.id()
			if id != nil && !json.Valid(id) {
				t.Fatalf("overflow id %q is not valid JSON", id)
			}
			if out := jsonrpc.ErrorLine(id, CodeMessageTooLarge, "x", nil); !json.Valid(bytes.TrimSpace(out)) {
				t.Fatalf("error line for overflow id %q: %q", id, out)
			}
			ids = append(ids, string(id))
			lines = append(lines, "\x00OVER")
			return
		}
		if len(line) == 0 || len(line) > max || bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("line of %d bytes (max %d): %q", len(line), max, line)
		}
		lines = append(lines, string(line))
	})
	return lines, ids
}

// FuzzReadLines: the framing of both directions (client stdin, server
// stdout) splits any bytes into lines within the limit or overflows, never
// panics, finds only ids that are valid JSON in an overflow, and does not
// depend on how reads are cut.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\r\n\n"), uint16(8))
	f.Add([]byte(`{"jsonrpc":"2.0","id":007,"result":"xxxxxxxxxxxxxxxx"}`+"\n"), uint16(16))
	f.Add([]byte(`{"id":"a`+"\t"+`b","x":"yyyyyyyyyyyy"}`), uint16(10))
	f.Add([]byte(`{"result":"zzzzzzzzzzzzzzzzzzzz","id":"\q"}`+"\n"), uint16(12))
	f.Add([]byte(`{"id":12.5,"result":"zzzzzzzzzzzzzzzzzzzzzz"}`+"\n"), uint16(12))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		m := int(max%512) + 1
		lines, ids := readAll(t, data, m, false)
		lines1, ids1 := readAll(t, data, m, true)
		if !slices.Equal(lines, lines1) || !slices.Equal(ids, ids1) {
			t.Fatalf("whole reads: %q %q; one-byte reads: %q %q", lines, ids, lines1, ids1)
		}
	})
}

// FuzzOverflowID: whatever the kept ends of an over-long line hold, its id
// is nil or valid JSON, so the refusal can always be encoded.
func FuzzOverflowID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"`), []byte(`"}}`))
	f.Add([]byte(`{"id":007,`), []byte(`}`))
	f.Add([]byte(`{"a":"`), []byte(`","id":"\q"}`))
	f.Add([]byte(`{"a":"`), []byte(`","id":-0,"jsonrpc":"2.0"}`))
	f.Fuzz(func(t *testing.T, head, tail []byte) {
		id := (&overflow{head: head, tail: tail}).id()
		if id != nil && !json.Valid(id) {
			t.Fatalf("id %q is not valid JSON", id)
		}
		jsonrpc.ErrorLine(id, CodeMessageTooLarge, "x", nil)
	})
}

// FuzzAdvertiseListChanged: the initialize/server/discover rewrite of any
// server line either fails cleanly or yields valid JSON that keeps every
// top-level member and, when it declared tools, says
// capabilities.tools.listChanged = true.
func FuzzAdvertiseListChanged(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":null},"n":12345678901234567890123}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{"listChanged":false,"x":1e400}}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"capabilities":[]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		out, caps, _, err := advertiseListChanged(line)
		if err != nil {
			return
		}
		var in, got map[string]json.RawMessage
		json.Unmarshal(line, &in)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("rewrite of %q is not a JSON object: %q", line, out)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(in)), slices.Sorted(maps.Keys(got))) {
			t.Fatalf("members %v became %v", slices.Sorted(maps.Keys(in)), slices.Sorted(maps.Keys(got)))
		}
		var r struct {
			Result struct {
				Capabilities struct {
					Tools struct {
						ListChanged bool `json:"listChanged"`
					} `json:"tools"`
				} `json:"capabilities"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &r); err != nil || (caps.tools && !r.Result.Capabilities.Tools.ListChanged) {
			t.Fatalf("rewrite %q does not say listChanged (%v)", out, err)
		}
	})
}

// FuzzAckToolsListChanged: the subscriptions/acknowledged rewrite and the
// subscription id reader never panic, and valid JSON stays valid JSON.
func FuzzAckToolsListChanged(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":false},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`))
	f.Add([]byte(`{"params":[]}`))
	f.Add([]byte(`{"params":{"notifications":null}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		out := ackToolsListChanged(line)
		if json.Valid(line) && !json.Valid(out) {
			t.Fatalf("ack rewrite of %q: %q is not valid JSON", line, out)
		}
		var m struct {
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(line, &m)
		subscriptionID(m.Params)
	})
}
