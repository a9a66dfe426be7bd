package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// benchTools returns n tool definitions of the size real servers list
// (a description, annotations, an inputSchema of a few properties).
func benchTools(n int) []json.RawMessage {
	tools := make([]json.RawMessage, n)
	for i := range tools {
		tools[i] = json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","title":"Tool %d","description":"Reads the record named by id from the inventory and returns it with its history; limit bounds the history entries.","annotations":{"readOnlyHint":true,"openWorldHint":false},"inputSchema":{"type":"object","properties":{"id":{"type":"string","description":"record id"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":10},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"],"additionalProperties":false}}`, i, i))
	}
	return tools
}

// benchListResult is a tools/list result carrying tools as the server
// sent them.
func benchListResult(tools []json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"tools": tools})
	return b
}

// BenchmarkNewCatalog is the cost of making the catalog of a listing of
// 20 tools: cold (the first) and after a catalog that holds them already
// (a restart or re-list that changed nothing).
func BenchmarkNewCatalog(b *testing.B) {
	tools := benchTools(20)
	prev, err := newCatalog(tools)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		prev *Catalog
	}{{"cold", nil}, {"unchanged", prev}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newCatalogAfter(bc.prev, tools); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompileToolsUnchanged is the cost of a re-list (a restart, a
// list_changed) whose catalog did not change: 20 tools.
func BenchmarkCompileToolsUnchanged(b *testing.B) {
	cat, err := newCatalog(benchTools(20))
	if err != nil {
		b.Fatal(err)
	}
	prev := compileTools(cat, nil)
	b.ReportAllocs()
	for b.Loop() {
		prev = compileTools(cat, prev)
	}
}

// BenchmarkNoteListedUnchanged is the host's cost of a client's tools/list
// answer that shows the current catalog: 20 tools.
func BenchmarkNoteListedUnchanged(b *testing.B) {
	tools := benchTools(20)
	cat, err := newCatalog(tools)
	if err != nil {
		b.Fatal(err)
	}
	c := &child{epoch: "01JQ0000000000000000000000"}
	h := &Host{informed: map[string]build.Digest{}, child: c, catalog: cat, tools: compileTools(cat, nil), state: StateReady}
	result := benchListResult(tools)
	b.ReportAllocs()
	for b.Loop() {
		h.noteListedLocked(c, result)
	}
}

// BenchmarkCheckCall is the catalog check of one valid tools/call whose
// tool the client was given unchanged: a schema only the validator checks
// (minLength), and plain ones that the fast check answers on the
// arguments' bytes (internal/toolschema): with bounds and items, and with types
// and required only.
func BenchmarkCheckCall(b *testing.B) {
	plain := json.RawMessage(`{"name":"echo","description":"returns its text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`)
	other := json.RawMessage(`{"name":"named","inputSchema":{"type":"object","properties":{"id":{"type":"string","minLength":2},"limit":{"type":"integer"}},"required":["id"]}}`)
	for _, bc := range []struct {
		name, tool string
		args       json.RawMessage
	}{
		{"validator", "named", json.RawMessage(`{"id":"sku-1042","limit":5}`)},
		{"bounds-items", "tool_3", json.RawMessage(`{"id":"sku-1042","limit":5,"tags":["a","b"]}`)},
		{"plain", "echo", json.RawMessage(`{"text":"` + strings.Repeat("a", 120) + `"}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tools := append(benchTools(20), plain, other)
			cat, err := newCatalog(tools)
			if err != nil {
				b.Fatal(err)
			}
			c := &child{epoch: "01JQ0000000000000000000000"}
			h := &Host{informed: map[string]build.Digest{}, child: c, catalog: cat, tools: compileTools(cat, nil), state: StateReady}
			h.noteListedLocked(c, benchListResult(tools))
			m := &jsonrpc.Message{ID: json.RawMessage("7")}
			p := &callParams{Name: bc.tool, Arguments: bc.args}
			b.ReportAllocs()
			for b.Loop() {
				if refusal := h.checkCallLocked(m, p); refusal != nil {
					b.Fatalf("refused: %s", refusal)
				}
			}
		})
	}
}

// BenchmarkDigestList is a restart's cost of the digest of a prompts or
// resources list of 50 items: cold (the first fetch) and fetched as it was
// the last time.
func BenchmarkDigestList(b *testing.B) {
	items := make([]json.RawMessage, 50)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"uri":"file:///project/docs/page-%d.md","name":"page-%d","title":"Page %d","mimeType":"text/markdown","description":"A page of the project's documentation."}`, i, i, i))
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			(&Host{}).digestList("resources/list", items)
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		h := &Host{}
		h.digestList("resources/list", items)
		b.ReportAllocs()
		for b.Loop() {
			h.digestList("resources/list", items)
		}
	})
}
