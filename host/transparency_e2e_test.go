package host_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// echoHost starts mcpepoch host over host/testdata/echoserver, initialized
// and with the catalog listed, so that calls are checked against it.
func echoHost(t *testing.T) *raw {
	t.Helper()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/echoserver"), p.path("bin/echoserver"))
	c := startRaw(t, p, nil, "./bin/echoserver")
	c.initialize()
	c.listTools()
	return c
}

// callLine is a tools/call request line with id and raw arguments.
func callLine(id int, tool, args string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// A valid JSON number no float64 holds, against a schema that does not
// constrain it, reaches the server byte for byte; where a bound exists it
// is compared exactly.
func TestForwardsNumbersBeyondFloat64(t *testing.T) {
	c := echoHost(t)
	for i, args := range []string{
		`{"b":1e400}`,
		`{"b":-1e400,"c":1e-400}`,
		`{"c":123456789012345678901234567890,"d":18446744073709551616}`,
		`{"x":[1E+400,{"y":-0.000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001}]}`,
	} {
		line := callLine(9000+i, "echo", args)
		c.sendLine(line)
		r := c.response(fmt.Sprint(9000+i), waitLong)
		if r.Error != nil {
			t.Fatalf("arguments %s: %v", args, r)
		}
		if got := r.text(); got != string(line)+"\n" {
			t.Errorf("the server read\n%q\nthe client sent\n%q", got, line)
		}
	}
	for i, tc := range []struct {
		n       string
		refused bool
	}{
		{"9007199254740992", false}, // the bound itself
		{"9007199254740993", true},  // float64 rounds it onto the bound
		{"18446744073709551617", true},
		{"1e400", true},
		{"-1e400", false},
	} {
		line := callLine(9100+i, "bounded", `{"n":`+tc.n+`}`)
		c.sendLine(line)
		r := c.response(fmt.Sprint(9100+i), waitLong)
		switch {
		case tc.refused && (r.Error != nil || !r.isError() || !strings.HasPrefix(r.text(), "invalid_arguments:")):
			t.Errorf("n=%s (maximum 2^53): got %v, want an isError result invalid_arguments", tc.n, r)
		case !tc.refused && (r.Error != nil || r.text() != string(line)+"\n"):
			t.Errorf("n=%s (maximum 2^53): got %v, want it forwarded byte for byte", tc.n, r)
		}
	}
}

// Arguments nested deeper than the reader's limit are refused under the
// request's own id; a deep result from the server reaches the client as
// the server wrote it.
func TestDeepNestingAnsweredUnderItsID(t *testing.T) {
	c := echoHost(t)
	d := jsonrpc.MaxDepth + 10
	c.sendLine(callLine(9200, "echo", strings.Repeat("[", d)+strings.Repeat("]", d)))
	r := c.response("9200", waitLong)
	wantError(t, r, jsonrpc.CodeInvalidRequest, "invalid request: nested deeper than 10000 levels")
	for _, inv := range c.invalidLines() {
		t.Errorf("the host wrote a line that is not JSON-RPC: %.200s", inv)
	}
	wantText(t, c.callWait("echo", map[string]any{"after": "deep"}), `"after":"deep"`)

	for _, depth := range []int{jsonrpc.MaxDepth - 10, jsonrpc.MaxDepth + 10} {
		id := c.call("deep", map[string]any{"depth": depth})
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"v":%s%s}}}`,
			id, strings.Repeat("[", depth), strings.Repeat("]", depth))
		c.waitFor(waitLong, "the deep result to id "+id, func() bool {
			return slicesContain(c.lines, want) || slicesContain(c.invalid, want)
		})
	}
}

func slicesContain(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// MCP's stdio framing is newline-delimited: a client line ending in CRLF
// reaches the server with its message bytes unchanged, framed by a
// newline as the host frames every line it writes.
func TestCRLFLineFramedByNewline(t *testing.T) {
	c := echoHost(t)
	line := callLine(9300, "echo", `{"crlf":true}`)
	c.sendLine(append(bytes.Clone(line), '\r'))
	r := c.response("9300", waitLong)
	if r.Error != nil || r.text() != string(line)+"\n" {
		t.Fatalf("got %v, want the server to read %q", r, string(line)+"\n")
	}
}
