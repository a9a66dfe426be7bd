package jsonrpc

import (
	"strings"
	"testing"
)

// Reading a message's envelope allocates the Message and what is kept of
// it that no constant spells: a tools/call's tool name, not its method,
// and nothing for the nested values stepped over (up to 64 levels).
func TestEnvelopeAllocations(t *testing.T) {
	call := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("y", 150) + `","deep":[[{"a":[1]}]]},"_meta":{"progressToken":3}}}`)
	result := []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":` +
		strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}}`)
	for _, c := range []struct {
		name   string
		read   func() error
		allocs float64
	}{
		{"ParseClient tools/call", func() error { _, err := ParseClient(call); return err }, 2},
		{"Parse result", func() error { _, err := Parse(result); return err }, 1},
	} {
		var err error
		got := testing.AllocsPerRun(100, func() { err = c.read() })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got > c.allocs {
			t.Errorf("%s: %.0f allocations per message, want at most %.0f", c.name, got, c.allocs)
		}
	}
}
