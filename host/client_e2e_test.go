package host_test

// End-to-end tests of the client side of the gateway: how it reads client
// messages, matches ids, writes to the client and recovers. Each test's
// comment says what it checks and how the host behaved when it failed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// rgSameID reports whether two JSON-RPC ids are the same value: strings
// after unescaping, numbers exactly (1.0 is 1).
func rgSameID(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if a[0] == '"' || b[0] == '"' {
		var sa, sb string
		return a[0] == b[0] && json.Unmarshal(a, &sa) == nil && json.Unmarshal(b, &sb) == nil && sa == sb
	}
	ra, oka := new(big.Rat).SetString(string(a))
	rb, okb := new(big.Rat).SetString(string(b))
	if oka && okb {
		return ra.Cmp(rb) == 0
	}
	return bytes.Equal(a, b)
}

// responsesTo returns the responses whose id is the value of id.
func (c *raw) responsesTo(id json.RawMessage) []*wire {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*wire
	for _, m := range c.msgs {
		if m.Method == "" && rgSameID(m.ID, id) {
			out = append(out, m)
		}
	}
	return out
}

// responseTo waits for the first response whose id is the value of id.
func (c *raw) responseTo(id json.RawMessage, timeout time.Duration) *wire {
	c.t.Helper()
	var r *wire
	c.waitFor(timeout, "the response to id "+string(id), func() bool {
		for _, m := range c.msgs {
			if m.Method == "" && rgSameID(m.ID, id) {
				r = m
				return true
			}
		}
		return false
	})
	return r
}

// received returns how many messages the client has received.
func (c *raw) received() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// responseAfter waits for the first response among the messages received
// after the first n.
func (c *raw) responseAfter(n int, timeout time.Duration) *wire {
	c.t.Helper()
	var r *wire
	c.waitFor(timeout, fmt.Sprintf("a response after message %d", n), func() bool {
		for _, m := range c.msgs[n:] {
			if m.Method == "" {
				r = m
				return true
			}
		}
		return false
	})
	return r
}

// serverRequest waits for the n-th request (counting from 1) named method
// that the host forwarded from the server to the client.
func (c *raw) serverRequest(method string, n int) *wire {
	c.t.Helper()
	var r *wire
	c.waitFor(waitLong, fmt.Sprintf("server request %d %s", n, method), func() bool {
		k := 0
		for _, m := range c.msgs {
			if m.Method == method && rgHasID(m.ID) {
				if k++; k == n {
					r = m
					return true
				}
			}
		}
		return false
	})
	return r
}

func rgHasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// auditRecords returns mcpepoch audit show --json --type typ.
func (p *project) auditRecords(typ string) []audit.Record {
	p.t.Helper()
	out := p.cli("audit", "show", "--json", "--dir", p.dir, "--type", typ)
	return parseAuditRecords(p.t, out.Stdout)
}

// bounded runs mcpepoch args… in the project, killed after timeout. It
// returns stdout, stderr, the exit status, how long it ran, and whether it
// ran out of time.
func (p *project) bounded(timeout time.Duration, args ...string) (out, errOut string, code int, took time.Duration, timedOut bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcpepoch(p.t), args...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	out, errOut = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out, errOut, -1, took, true
	case errors.As(err, &ee):
		return out, errOut, ee.ExitCode(), took, false
	case err != nil:
		p.t.Fatalf("mcpepoch %s: %v", strings.Join(args, " "), err)
	}
	return out, errOut, 0, took, false
}

// pipeHost is mcpepoch host for a project under a client that controls
// the read end of the host's stdout itself: it may stop reading, or close
// it.
type pipeHost struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // read end
	br     *bufio.Reader
	stderr testenv.Buffer
	done   chan struct{}
	err    error // of cmd.Wait, once done is closed
}

// startPipeHost starts mcpepoch host -- sh ./server.sh for p. In
// t.Cleanup the client closes stdin, drains stdout and waits for the host
// to exit, killing it after 15 s.
func startPipeHost(t testing.TB, p *project) *pipeHost {
	t.Helper()
	h := &pipeHost{t: t, done: make(chan struct{})}
	h.cmd = exec.Command(mcpepoch(t), p.hostArgs(nil)...)
	h.cmd.Dir = p.dir
	h.cmd.Env = testenv.Environ()
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stdout = w
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	h.stdout, h.br = r, bufio.NewReaderSize(r, 1<<20)
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		h.stdin.Close()
		go io.Copy(io.Discard, r) // fails at once if the test closed r
		select {
		case <-h.done:
		case <-time.After(15 * time.Second):
			t.Errorf("mcpepoch host did not exit within 15s of its stdin closing: killing it")
			h.cmd.Process.Kill()
			<-h.done
		}
		r.Close()
		if t.Failed() {
			t.Logf("mcpepoch host stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

// send writes one line to the host.
func (h *pipeHost) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatalf("write to mcpepoch host: %v", err)
	}
}

// readResponse reads lines from the host until the response to id (its
// JSON text) and returns it.
func (h *pipeHost) readResponse(id string) *wire {
	h.t.Helper()
	h.stdout.SetReadDeadline(time.Now().Add(waitLong))
	for {
		line, err := h.br.ReadBytes('\n')
		if err != nil {
			h.t.Fatalf("reading the response to id %s: %v\nhost stderr:\n%s", id, err, h.stderr.String())
		}
		var w wire
		if json.Unmarshal(line, &w) == nil && w.Method == "" && string(w.ID) == id {
			return &w
		}
	}
}

// listening waits for the host's socket and returns the agent run and the
// socket's path.
func (h *pipeHost) listening() (run, socket string) {
	h.t.Helper()
	waitFor(h.t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(h.stderr.String()) })
	m := listeningRe.FindStringSubmatch(h.stderr.String())
	return m[1], m[2]
}

const rgInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcpepoch-host-test","version":"0.1.0"}}}`

// waitCatalog polls the host's status until it knows the catalog: what
// mcpepoch approve needs.
func (p *project) waitCatalog() host.Status {
	p.t.Helper()
	var st host.Status
	waitFor(p.t, waitLong, "the host to fetch the catalog", func() bool {
		st = p.status()
		return st.State == host.StateReady && st.Catalog != "" && st.Execution != nil
	})
	return st
}

// TestCallReadDifferentlyIsRefused: a tools/call the host could read
// differently from the server is refused, never forwarded. The host read
// client messages with encoding/json, which matches member names
// case-insensitively (the last of "method" and "Method" won), and a params
// decode that failed skipped the grant and catalog checks, while the
// server (go-sdk: exact names) ran slow_write. With every tool needing a
// grant and only version approved, the "Method after method", "Name 0"
// and "NAME version" lines ran slow_write on the old host; the duplicates
// are read one way by the host and may be read the other way by a server
// that keeps the first member.
func TestCallReadDifferentlyIsRefused(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[grants]\nproof = [\"same-user\"]\n") // no exempt: every tool needs a grant; approve --yes counts
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	p.waitCatalog()
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "version")

	// The policy holds for a plain call, and version is approved.
	wantError(t, c.callWait("slow_write", map[string]any{"key": "plain"}), host.CodeAuthorizationRequired, "authorization_required:")
	wantText(t, c.callWait("version", nil), "revision=A")
	waitFor(t, waitLong, "the tool_called record of version", func() bool { return len(p.auditRecords(audit.TypeToolCalled)) == 1 })

	args := `"arguments":{"key":"trick"}`
	for _, tc := range []struct {
		name, line string
		code       int
		id         string // of the request
	}{
		{"Method after method", `{"jsonrpc":"2.0","id":"t1","method":"tools/call","Method":"x","params":{"name":"slow_write",` + args + `}}`, -32600, `"t1"`},
		{"Method before method", `{"jsonrpc":"2.0","id":"t2","Method":"x","method":"tools/call","params":{"name":"slow_write",` + args + `}}`, -32600, `"t2"`},
		{"duplicate method", `{"jsonrpc":"2.0","id":"t3","method":"tools/call","method":"ping","params":{"name":"slow_write",` + args + `}}`, -32600, `"t3"`},
		{"Name 0", `{"jsonrpc":"2.0","id":"t4","method":"tools/call","params":{"name":"slow_write","Name":0,` + args + `}}`, -32602, `"t4"`},
		{"NAME version", `{"jsonrpc":"2.0","id":"t5","method":"tools/call","params":{"name":"slow_write","NAME":"version",` + args + `}}`, -32602, `"t5"`},
		{"duplicate name", `{"jsonrpc":"2.0","id":"t6","method":"tools/call","params":{"name":"slow_write","name":"version",` + args + `}}`, -32602, `"t6"`},
		{"duplicate name reversed", `{"jsonrpc":"2.0","id":"t7","method":"tools/call","params":{"name":"version","name":"slow_write",` + args + `}}`, -32602, `"t7"`},
		{"argument named twice", `{"jsonrpc":"2.0","id":"t8","method":"tools/call","params":{"name":"version","arguments":{"x":{"key":"trick","key":"plain"}}}}`, -32602, `"t8"`},
	} {
		n := c.received()
		c.sendLine([]byte(tc.line))
		r := c.responseAfter(n, waitLong)
		if r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: got %v, want error %d", tc.name, r, tc.code)
		}
		// An envelope the host refuses to read may not yield the id.
		if string(r.ID) != tc.id && (tc.code != -32600 || string(r.ID) != "null") {
			t.Errorf("%s: error id %s, want %s", tc.name, r.ID, tc.id)
		}
	}

	// Nothing reached the server, and nothing was recorded as called: a
	// last approved call, once recorded, proves any record of the tricks
	// (written before it) would be there.
	wantText(t, c.callWait("version", nil), "revision=A")
	var recs []audit.Record
	waitFor(t, waitLong, "the second tool_called record of version", func() bool {
		recs = p.auditRecords(audit.TypeToolCalled)
		return len(recs) >= 2
	})
	for _, r := range recs {
		if r.Fields[audit.FieldTool] != "version" {
			t.Errorf("tool_called record for %v: %v", r.Fields[audit.FieldTool], r.Fields)
		}
	}
	if len(recs) != 2 {
		t.Errorf("%d tool_called records, want 2 (the approved version calls)", len(recs))
	}
	if s, n := p.read("counter/trick.started"), p.read("counter/trick.count"); s != "" || n != "" {
		t.Errorf("slow_write ran: started %q, count %q", s, n)
	}
}

// TestReencodedIDsAnswered: a server that re-encodes the client's id (go-sdk
// and the TypeScript SDK answer 1.0 as 1, "\u0070" as "p") still has its
// answer delivered. The host keyed requests in flight by the id's text and
// dropped these answers as unrequested.
func TestReencodedIDsAnswered(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	for _, tc := range []struct{ id, line string }{
		{`500.0`, `{"jsonrpc":"2.0","id":500.0,"method":"tools/list"}`},
		{`5.01e2`, `{"jsonrpc":"2.0","id":5.01e2,"method":"tools/call","params":{"name":"version","arguments":{}}}`},
		{`"\u0070ing"`, `{"jsonrpc":"2.0","id":"\u0070ing","method":"ping"}`},
	} {
		c.sendLine([]byte(tc.line))
		r := c.responseTo(json.RawMessage(tc.id), waitLong)
		if r.Error != nil || len(r.Result) == 0 {
			t.Errorf("id %s: got %v, want a result", tc.id, r)
		}
	}
	wantText(t, c.responseTo(json.RawMessage(`501`), 0), "revision=A")
	c.roundTrip("ping", nil) // anything still on its way has arrived
	for _, id := range []string{`500`, `501`, `"ping"`} {
		if rs := c.responsesTo(json.RawMessage(id)); len(rs) != 1 {
			t.Errorf("%d responses to id %s, want 1", len(rs), id)
		}
	}
}

// askLog is one line of the askserver's log: a response it received.
type askLog struct {
	PID      int             `json:"pid"`
	Revision string          `json:"revision"`
	Message  json.RawMessage `json:"message"`
}

// TestServerRequestsReachTheirEpoch: requests servers send to the
// client are matched to the epoch that sent them even when two epochs use
// the same id. The host passed server ids through and remembered only the
// last epoch to use an id, so the client's answer to the old server's
// roots/list (id 1) reached the new server as its answer to
// sampling/createMessage (also id 1), and the real answer was dropped.
func TestServerRequestsReachTheirEpoch(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/askserver"), p.path("bin/askserver"))
	script := func(rev string) {
		p.write("server.sh", "#!/bin/sh\nexport ASKSERVER_LOG=answers.log\nexport ASKSERVER_REVISION="+rev+"\nexec ./bin/askserver\n")
	}
	script("A")
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("ask", map[string]any{"method": "roots/list"}), "asked roots/list revision=A")
	old := c.serverRequest("roots/list", 1)

	script("B")
	p.record()
	c.waitNotifications("notifications/tools/list_changed", 1, waitLong)
	wantText(t, c.callWait("ask", map[string]any{"method": "sampling/createMessage"}), "asked sampling/createMessage revision=B")
	cur := c.serverRequest("sampling/createMessage", 1)

	// The client answers the old server's request late, then the new one's.
	c.send(map[string]any{"jsonrpc": "2.0", "id": old.ID, "result": map[string]any{
		"roots": []any{map[string]any{"uri": "file:///OLD-EPOCH-ANSWER"}}}})
	c.send(map[string]any{"jsonrpc": "2.0", "id": cur.ID, "result": map[string]any{
		"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "NEW-EPOCH-ANSWER"}}})

	var logs []askLog
	read := func() {
		logs = nil
		for _, l := range lines(p.read("answers.log")) {
			var e askLog
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("answers.log: %v: %q", err, l)
			}
			logs = append(logs, e)
		}
	}
	waitFor(t, waitLong, "the new server to receive an answer", func() bool {
		read()
		return slices.ContainsFunc(logs, func(e askLog) bool { return e.Revision == "B" })
	})
	c.roundTrip("ping", nil)
	time.Sleep(300 * time.Millisecond) // a second delivery would be logged by now
	read()
	var got []askLog
	for _, e := range logs {
		if bytes.Contains(e.Message, []byte("OLD-EPOCH-ANSWER")) {
			t.Errorf("server revision %s (pid %d) received the client's answer to the old server's request: %s", e.Revision, e.PID, e.Message)
		}
		if e.Revision == "B" {
			got = append(got, e)
		}
	}
	if len(got) != 1 {
		t.Fatalf("the new server received %d answers, want 1: %+v", len(got), logs)
	}
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(got[0].Message, &resp); err != nil {
		t.Fatal(err)
	}
	if string(resp.ID) != "1" || resp.Result.Content.Text != "NEW-EPOCH-ANSWER" {
		t.Errorf("the new server received %s, want its own id 1 and the text NEW-EPOCH-ANSWER", got[0].Message)
	}
}

// TestClientNotReadingFreezesNothing: a client that stops reading stdout does
// not freeze the host. The host wrote to the client under the lock that
// status, restarts and approvals take; once the pipe was full it blocked
// there, and mcpepoch status and record hung.
func TestClientNotReadingFreezesNothing(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	h := startPipeHost(t, p)
	h.send(rgInitialize)
	h.readResponse("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Each tools/list answer is about 1 KiB: far more than a pipe holds.
	const n = 300
	for i := range n {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 10+i))
	}
	time.Sleep(time.Second)

	out, errOut, code, took, timedOut := p.bounded(15*time.Second, "status", "--dir", p.dir, "--json")
	if timedOut {
		t.Fatalf("mcpepoch status did not answer within 15s while the client does not read\n%s%s", out, errOut)
	}
	var all []host.Status
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) != 1 || all[0].State != host.StateReady {
		t.Fatalf("mcpepoch status: exit %d after %s\n%s%s", code, took, out, errOut)
	}
	t.Logf("status took %s", took)

	p.server("", map[string]string{"FIXTURE_REVISION": "B"})
	out, errOut, code, took, timedOut = p.bounded(60*time.Second, "record", "--dir", p.dir, "--json", "--timeout", "10s")
	if timedOut {
		t.Fatalf("mcpepoch record --timeout 10s did not finish within 60s\n%s%s", out, errOut)
	}
	var rec struct {
		Hosts []struct {
			Result string `json:"result"`
			Error  string `json:"error"`
		} `json:"hosts"`
	}
	json.Unmarshal([]byte(out), &rec)
	if code != 0 || len(rec.Hosts) != 1 || rec.Hosts[0].Result != "restarted" {
		t.Fatalf("mcpepoch record: exit %d after %s, want the host restarted\n%s%s", code, took, out, errOut)
	}

	// Once the client reads again, every answer is there, in one piece.
	h.stdout.SetReadDeadline(time.Now().Add(waitLong))
	answered := map[string]bool{}
	for len(answered) < n {
		line, err := h.br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", len(answered), err)
		}
		var w wire
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatalf("a line that is not JSON: %.200q", line)
		}
		if w.Method == "" && w.Error == nil {
			answered[string(w.ID)] = true
		}
	}
}

// TestClientClosingStdoutEndsCleanly: a client that closes its end of the
// host's stdout ends the session cleanly. The host died of SIGPIPE on its
// next write to the client (here the list_changed of a restart), leaving
// its socket, its execution record and no client_closed record.
func TestClientClosingStdoutEndsCleanly(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	h := startPipeHost(t, p)
	h.send(rgInitialize)
	h.readResponse("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	h.readResponse("2")
	run, socket := h.listening()
	record := p.path(filepath.Join(".mcpepoch", "hosts", run+".json"))
	var er host.ExecutionRecord
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".mcpepoch", "hosts", run+".json"))), &er); err != nil || er.ProcessID == 0 {
		t.Fatalf("execution record %s: %v", record, err)
	}
	killOnCleanup(t, er.ProcessID)

	h.stdout.Close()
	restart := p.background("restart", "--dir", p.dir) // the host writes list_changed
	select {
	case <-h.done:
	case <-time.After(waitLong):
		t.Fatalf("the host did not exit within %s of its client closing stdout", waitLong)
	}
	<-restart.done
	ws := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("the host died of signal %v", ws.Signal())
	}
	if _, err := os.Stat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s left behind: %v", socket, err)
	}
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("execution record %s left behind: %v", record, err)
	}
	if !slices.ContainsFunc(p.auditRecords(audit.TypeClientClosed), func(r audit.Record) bool { return r.Run == run }) {
		t.Errorf("no client_closed record for run %s", run)
	}
	if !waitGone(er.ProcessID, 10*time.Second) {
		t.Errorf("server pid %d outlived the host", er.ProcessID)
	}
}

// TestRestartDuringInitializeInvisible: a restart while the client's
// initialize is in flight is invisible to the client: the new server
// answers its initialize, once. The host failed it with server_restarted
// (-31001) and replayed it privately to the new server, so the client
// never got an initialize result.
func TestRestartDuringInitializeInvisible(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	// The first server takes 3 s to start, so the restart is sure to find
	// the initialize in flight.
	p.server("sleep 3\n", map[string]string{"FIXTURE_REVISION": "A"})
	c := startRaw(t, p, nil)
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	id := c.request("initialize", map[string]any{
		"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpepoch-host-test", "version": "0.1.0"},
	})
	time.Sleep(200 * time.Millisecond)
	p.server("sleep 0.5\n", map[string]string{"FIXTURE_REVISION": "B"})
	p.record()

	r := c.response(id, waitLong)
	if r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ProtocolVersion == "" || res.ServerInfo.Version != "B" {
		t.Fatalf("initialize result %s: want one from the new server (version B)", r.Result)
	}
	c.notify("notifications/initialized", nil)
	if names := c.listTools(); !slices.Contains(names, "version") {
		t.Errorf("tools/list: %q", names)
	}
	wantText(t, c.callWait("version", nil), "revision=B")
	if rs := c.responses(id); len(rs) != 1 {
		t.Errorf("%d responses to initialize, want 1: %v", len(rs), rs)
	}
}

// TestCancelledRequestNotFailedByRestart: a request the client cancelled
// is the client's to forget; a later restart does not answer it with
// server_restarted. The host kept it in flight until the server answered,
// and a server that honours the cancellation never does (MCP: "receivers
// ... SHOULD NOT send a response for the cancelled request"), so the next
// restart answered it with -31001. The lateserver never answers its hang
// call, as such a server; go-sdk answers a cancelled call with an error
// itself, so the fixture case checks only that the restart adds no error.
func TestCancelledRequestNotFailedByRestart(t *testing.T) {
	t.Parallel()
	t.Run("lateserver", func(t *testing.T) {
		p := newProject(t, nil)
		copyFile(t, buildServer(t, "host/testdata/lateserver"), p.path("bin/lateserver"))
		c := startRaw(t, p, nil, "./bin/lateserver")
		c.initialize()
		id := c.call("hang", nil)
		waitFor(t, waitLong, "the call to be forwarded", func() bool { return p.status().InFlight == 1 })
		c.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "test"})
		c.roundTrip("ping", nil) // the host reads client messages in order: it has seen the cancellation
		if n := p.status().InFlight; n != 0 {
			t.Errorf("%d requests in flight after the cancellation, want 0", n)
		}
		p.restart()
		// The stopped server answered the call late ("late") on its way out.
		waitFor(t, waitLong, "the host to drop the late answer", func() bool {
			return strings.Contains(c.stderr.String(), "dropped a late message from a stopped server")
		})
		if e := c.stderr.String(); strings.Contains(e, `late\"`) || !strings.Contains(e, "bytes, id "+string(id)+"; contents not logged") {
			t.Errorf("the host's log of the late answer shows its contents or lacks its size and id:\n%s", e)
		}
		c.roundTrip("ping", nil)
		if rs := c.responses(id); len(rs) != 0 {
			t.Errorf("the cancelled call was answered: %v", rs)
		}
	})
	t.Run("fixture", func(t *testing.T) {
		p := newProject(t, nil)
		p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter})
		c := startRaw(t, p, nil)
		c.initialize()
		id := c.call("slow_write", map[string]any{"key": "k", "delayMs": 5000})
		waitFor(t, waitLong, "the write to start", func() bool { return p.read("counter/k.started") != "" })
		c.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "test"})
		c.roundTrip("ping", nil) // the host reads client messages in order: it has seen the cancellation
		p.restart()
		c.roundTrip("ping", nil)
		for _, r := range c.responses(id) {
			if r.Error != nil && r.Error.Code == host.CodeServerRestarted {
				t.Errorf("the cancelled call was failed by the restart: %v", r)
			}
		}
		if n := p.read("counter/k.count"); n != "" {
			t.Errorf("the cancelled write counted: %q", n)
		}
	})
}

// TestOneShotClientGetsAnswers: a client that writes its requests and closes
// stdin at once (printf … | mcpepoch host) gets its answers. The host
// stopped the server as soon as stdin ended, dropping the answers on their
// way.
func TestOneShotClientGetsAnswers(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	in := rgInitialize + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcpepoch(t), p.hostArgs(nil)...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcpepoch host: %v\n%s", err, stderr.String())
	}
	got := map[string]*wire{}
	for _, l := range lines(stdout.String()) {
		var w wire
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("a line that is not JSON: %q", l)
		}
		if w.Method == "" {
			got[string(w.ID)] = &w
		}
	}
	if r := got["1"]; r == nil || r.Error != nil || !bytes.Contains(r.Result, []byte(`"protocolVersion"`)) {
		t.Errorf("initialize: got %v\nstdout:\n%s\nstderr:\n%s", r, stdout.String(), stderr.String())
	}
	if r := got["2"]; r == nil || r.Error != nil || !bytes.Contains(r.Result, []byte(`"slow_write"`)) {
		t.Errorf("tools/list: got %v\nstdout:\n%s\nstderr:\n%s", r, stdout.String(), stderr.String())
	}
}

// TestCrashRecoveryRetriesFailedStart: a crash restart that fails (the binary
// briefly missing mid-build) is retried with backoff. The host tried once
// and stayed down until the next build signal.
func TestCrashRecoveryRetriesFailedStart(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	// The host runs the binary itself: a missing binary is a failed start,
	// not a wrapper that exits.
	p.write("mcpepoch.toml", "command = [\"./bin/fixture\"]\n\n[grants]\nexempt = [\"**\"]\n")
	c := startRaw(t, p, nil, "./bin/fixture")
	c.initialize()
	st := p.waitState(host.StateReady, waitLong)
	if st.Execution == nil {
		t.Fatal("no execution record")
	}
	pid, ep := st.Execution.ProcessID, st.Execution.Epoch

	bin, moved := p.path("bin/fixture"), p.path("bin/fixture.moved")
	if err := os.Rename(bin, moved); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	back := func() {
		once.Do(func() {
			if err := os.Rename(moved, bin); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Cleanup(back)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "a crash restart to fail", func() bool { return strings.Contains(c.stderr.String(), "crash recovery: ") })
	back()

	waitFor(t, waitLong, "the host to be ready on a new epoch", func() bool {
		st = p.status()
		return st.State == host.StateReady && st.Execution != nil && st.Execution.Epoch != ep
	})
	wantText(t, c.callWait("version", nil), "revision=A")
}
