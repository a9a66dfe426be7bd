package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// TestServerOutputThatIsNoMessage: what a server writes that is not a
// JSON-RPC message for the client ({}, a response to an id the host never
// sent, an id that is not UTF-8) never reaches the client's stdout, and
// is dropped visibly: a host log line and an audit record by size and id.
// A client request whose id is not UTF-8 is refused (invalid request).
func TestServerOutputThatIsNoMessage(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	// Written once the server is up, in one write(2) of less than PIPE_BUF.
	p.server("(sleep 1; printf '{}\\n{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\\n{\"jsonrpc\":\"2.0\",\"id\":\"\\377\",\"result\":{}}\\n') &\n", nil)
	c := startRaw(t, p, nil)
	c.initialize()
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("call: %v", r)
	}
	c.sendLine([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}"))
	r := c.response("null", waitLong)
	wantError(t, r, jsonrpc.CodeInvalidRequest, "invalid request: id is not valid UTF-8")

	if bad := c.invalidLines(); len(bad) > 0 {
		t.Errorf("the client got lines that are not JSON-RPC messages: %q", bad)
	}
	if rs := c.responses("999"); len(rs) > 0 {
		t.Errorf("the client got the forged response: %v", rs[0])
	}
	waitStderr(t, c, "the drops logged", func(s string) bool {
		return strings.Contains(s, "dropped a server message (2 bytes, id none") &&
			strings.Contains(s, "id 999; contents not logged): a response to an id no client request is waiting for")
	})
	recs := p.waitRecords("three dropped messages", func(recs []audit.Record) bool {
		return len(audit.Select(recs, audit.Filter{Type: audit.TypeChildOutputDropped})) >= 3
	})
	ids := map[string]bool{}
	for _, rec := range audit.Select(recs, audit.Filter{Type: audit.TypeChildOutputDropped}) {
		ids[fmt.Sprint(rec.Fields["id"], "/", rec.Fields["bytes"])] = true
	}
	if !ids["999/38"] {
		t.Errorf("no audit record of the forged response by id and size: %v", ids)
	}
}
