package host_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// A server whose tools/list gives the same nextCursor for ever is listed
// up to the repeat and no further: the tools it listed are kept and its
// calls go through, the cut is told once (stderr, audit log), and later
// calls, to a listed tool or to one it lacks, list nothing again.
func TestListCursorLoop(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/bigserver"), p.path("bin/bigserver"))
	log := p.path("requests.log")
	c := startRawEnv(t, p, []string{"BIGSERVER_CURSOR=loop", "BIGSERVER_LOG=" + log}, nil, "./bin/bigserver")
	c.initialize()
	for range 3 {
		if r := c.callWait("big", map[string]any{"bytes": 3}); r.Error != nil || r.text() != "xxx" {
			t.Fatalf("a call to a listed tool: %v", r)
		}
	}
	for range 2 {
		if r := c.callWait("absent", nil); r.Error == nil {
			t.Fatalf("a call to a tool the server never listed: %v", r)
		}
	}
	var lists []string
	for _, l := range lines(p.read("requests.log")) {
		if strings.HasPrefix(l, "tools/list") {
			lists = append(lists, l)
		}
	}
	if want := []string{"tools/list ", "tools/list more"}; strings.Join(lists, "|") != strings.Join(want, "|") {
		t.Errorf("the server was asked tools/list %d times %q, want %q", len(lists), lists, want)
	}
	if n := strings.Count(c.stderr.String(), "nextCursor the listing had already followed"); n != 1 {
		t.Errorf("the cut is told %d times on stderr, want 1", n)
	}
	var cuts int
	for _, r := range p.auditRecords(audit.TypeChildOutputDropped) {
		if reason, _ := r.Fields["reason"].(string); strings.Contains(reason, "tools/list cut short") {
			cuts++
		}
	}
	if cuts != 1 {
		t.Errorf("%d child_output_dropped records of the cut, want 1", cuts)
	}
}

// Bytes of a server's answer that are not UTF-8 reach the client as
// U+FFFD, one per byte, as a JSON decoder reads them: a strict client
// would refuse the line.
func TestServerInvalidUTF8(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/bigserver"), p.path("bin/bigserver"))
	c := startRaw(t, p, nil, "./bin/bigserver")
	c.initialize()
	id := c.call("big", map[string]any{"invalid": true})
	r := c.response(id, waitLong)
	if r.Error != nil || r.text() != "a\uFFFD\uFFFDb" {
		t.Fatalf("an answer holding 0xff 0xfe: %v", r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if !utf8.ValidString(l) {
			t.Errorf("the host wrote a line that is not UTF-8: %q", l)
		}
	}
}

// A client request under an id that is still in flight is answered
// -32600 and not forwarded: the server answers each id once, so two
// requests under one id would leave one answer lost. Once the first is
// answered, its id may be used again.
func TestClientIDInFlight(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/lateserver"), p.path("bin/lateserver"))
	c := startRaw(t, p, nil, "./bin/lateserver")
	c.initialize()
	c.sendLine([]byte(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"hang","arguments":{}}}`))
	c.sendLine([]byte(`{"jsonrpc":"2.0","id":"dup","method":"ping"}`))
	r := c.response(`"dup"`, waitLong)
	wantError(t, r, -32600, "invalid request: id already in flight")
	wantNext(t, r, "send it under an id no request in flight uses")
	for i := range 2 { // an answered id is free again
		c.sendLine([]byte(`{"jsonrpc":"2.0","id":"again","method":"ping"}`))
		c.waitFor(waitLong, "the ping's answer", func() bool { return len(c.responsesLocked(`"again"`)) > i })
	}
	for _, r := range c.responses(`"again"`) {
		if r.Error != nil {
			t.Errorf("a ping under an answered id: %v", r)
		}
	}
	if rs := c.responses(`"dup"`); len(rs) != 1 {
		t.Errorf("%d answers under the id in flight, want the one refusal: %v", len(rs), rs)
	}
}

// A handshake-era server that exits on the 2026-07-28 server/discover
// probe: the probe is answered -32601 (the client falls back to
// initialize), the exit is no crash, and a second probe is answered by
// the host without reaching the server.
func TestDiscoverProbeExit(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/bigserver"), p.path("bin/bigserver"))
	log := p.path("requests.log")
	c := startRawEnv(t, p, []string{"BIGSERVER_DISCOVER=exit", "BIGSERVER_LOG=" + log}, nil, "./bin/bigserver")
	for range 2 {
		wantError(t, c.roundTrip("server/discover", map[string]any{}), -32601, "method not found")
	}
	p.waitState(host.StateReady, waitLong)
	c.initialize()
	if r := c.callWait("big", map[string]any{"bytes": 2}); r.Error != nil || r.text() != "xx" {
		t.Fatalf("a call after the fallback: %v", r)
	}
	if n := strings.Count(p.read("requests.log"), "server/discover"); n != 1 {
		t.Errorf("the server got server/discover %d times, want 1", n)
	}
	if st := p.status(); st.Crashes != 0 {
		t.Errorf("status: %d crashes, want 0: an exit on the probe is none", st.Crashes)
	}
}
