package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/host"
)

// oddIDs are id spellings that look like a JSON-RPC id to a pattern but
// are not valid JSON: a leading zero, a raw tab, an unknown escape.
var oddIDs = []string{"007", "\"a\tb\"", `"\q"`}

// A client line over --max-message whose id is spelled oddly is refused
// with message_too_large under id null; the host and its server live on.
func TestMaxMessageOddClientID(t *testing.T) {
	const max = 16 << 10
	p := newProject(t, nil)
	c := startRaw(t, p, []string{"--max-message", fmt.Sprint(max)})
	c.initialize()
	pad := strings.Repeat("x", 2*max)
	n := 0
	for _, id := range oddIDs {
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"version","arguments":{"pad":"` + pad + `"}}}`,
			`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"version","arguments":{"pad":"` + pad + `"}},"id":` + id + `}`,
		} {
			c.sendLine([]byte(line))
			n++
			c.waitFor(waitLong, fmt.Sprintf("%d answers under id null", n), func() bool { return len(c.responsesLocked("null")) == n })
			wantError(t, c.responses("null")[n-1], host.CodeMessageTooLarge, "message_too_large:")
			wantText(t, c.callWait("version", nil), "revision=A")
		}
	}
	if bad := c.invalidLines(); len(bad) != 0 {
		t.Errorf("the host wrote lines that are not JSON-RPC messages: %.200q", bad)
	}
}

// A server answer over --max-message whose id is spelled oddly never
// takes the host down: the line is dropped like any line that is not JSON
// (an id the host cannot read names no request), and the server's next
// answer goes through. One whose id is valid JSON in another spelling
// ("\u0041" for "A") is answered with message_too_large under the client's
// own spelling.
func TestMaxMessageOddServerID(t *testing.T) {
	const max = 16 << 10
	p := newProject(t, map[string]string{"FIXTURE_OVERSIZE": "1"})
	c := startRaw(t, p, []string{"--max-message", fmt.Sprint(max)})
	c.initialize()
	ep := p.status().Execution.Epoch

	for _, spell := range []func(id string) string{
		func(id string) string { return "0" + id },
		func(id string) string { return "-0" + id },
		func(string) string { return oddIDs[1] },
		func(string) string { return oddIDs[2] },
	} {
		c.mu.Lock()
		next := fmt.Sprint(c.nextID + 1)
		c.mu.Unlock()
		id := c.call("oversize", map[string]any{"id": spell(next), "bytes": 2 * max})
		if id != next {
			t.Fatalf("request id %s, want %s", id, next)
		}
		wantText(t, c.response(id, waitLong), "oversize revision=A")
		wantText(t, c.callWait("version", nil), "revision=A")
		if n := len(c.responses(id)); n != 1 {
			t.Errorf("%d responses to id %s, want 1", n, id)
		}
	}

	c.send(map[string]any{"jsonrpc": "2.0", "id": "A", "method": "tools/call",
		"params": map[string]any{"name": "oversize", "arguments": map[string]any{"id": `"\u0041"`, "bytes": 2 * max}}})
	wantError(t, c.response(`"A"`, waitLong), host.CodeMessageTooLarge, "message_too_large:")
	wantText(t, c.callWait("version", nil), "revision=A")
	if n := len(c.responses(`"A"`)); n != 1 {
		t.Errorf("%d responses to id \"A\", want 1", n)
	}

	if got := p.status().Execution.Epoch; got != ep {
		t.Errorf("epoch %s, want %s: the server was restarted", got, ep)
	}
	if bad := c.invalidLines(); len(bad) != 0 {
		t.Errorf("the host wrote lines that are not JSON-RPC messages: %.200q", bad)
	}
}
