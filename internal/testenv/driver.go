package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Client is a running testdata/node/driver.mjs: a real MCP client (the
// TypeScript SDK's Client over StdioClientTransport) connected to a server
// command, scripted one JSON command per line.
//
// Methods must be called from the test's goroutine: a driver that dies or
// does not answer in time fails the test. What the server or the host
// answers, errors included, is returned to the caller.
type Client struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr Buffer

	mu      sync.Mutex
	nextID  int
	pending map[int]chan json.RawMessage
	unknown []string // result lines that answered no command

	done      chan struct{} // closed once the driver has exited
	closeOnce sync.Once
}

// opTimeout bounds every driver command beyond its own timeout. It is
// what a test waits for an answer that never comes before it fails: long
// enough for node, the host and the server to start on a loaded machine,
// short enough that a broken test fails in seconds.
const opTimeout = 20 * time.Second

// connectTimeout bounds the wait for the handshake in [Driver]: node
// starts the client, which starts the host, which computes the identity
// (walking node_modules) and starts node again for the server. On a
// machine at load 20 that took more than 20 s. A driver or host that
// fails exits, and that ends the wait at once.
const connectTimeout = 60 * time.Second

// Driver starts "node testdata/node/driver.mjs -- argv…" in dir, with the
// test's environment (see [Environ]) plus env, and waits for the MCP
// handshake to complete. argv is the server command: for instance the
// mcpepoch binary with "host", "--", "node", "dist/server.js". The
// driver's stderr, where the server's (and so the host's) stderr goes too,
// is kept for [Client.Stderr] and logged if the test fails. The driver and
// every process in its process group are killed in t.Cleanup if they have
// not exited by then.
func Driver(t testing.TB, dir string, env []string, argv ...string) *Client {
	t.Helper()
	if len(argv) == 0 {
		t.Fatal("testenv.Driver: no server command")
	}
	node, _ := LookNode(t)
	nodeDir := filepath.Join(RepoRoot(t), "testdata", "node")
	NPM(t, nodeDir)
	cmd := exec.Command(node, append([]string{filepath.Join(nodeDir, "driver.mjs"), "--"}, argv...)...)
	cmd.Dir = dir
	cmd.Env = Environ(env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A server process left behind can hold the stderr pipe open; the
	// driver's exit must not wait for it.
	cmd.WaitDelay = 5 * time.Second
	c := &Client{t: t, cmd: cmd, pending: map[int]chan json.RawMessage{}, done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start driver: %v", err)
	}
	c.stdin = stdin
	go c.read(stdout)
	t.Cleanup(func() {
		c.shutdown(10 * time.Second)
		if t.Failed() {
			t.Logf("driver %v stderr:\n%s", argv, c.Stderr())
		}
	})
	// The driver reads commands only once the handshake is done, so the
	// first answer means the client is connected.
	if _, err := c.do(map[string]any{"op": "events"}, connectTimeout); err != nil {
		t.Fatalf("driver for %v did not connect: %v\nstderr:\n%s", argv, err, c.Stderr())
	}
	return c
}

// read delivers each result line to the command that waits for it, then
// reaps the driver.
func (c *Client) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var head struct {
			ID *int `json:"id"`
		}
		json.Unmarshal(line, &head)
		c.mu.Lock()
		if head.ID == nil || c.pending[*head.ID] == nil {
			c.unknown = append(c.unknown, string(line))
		} else {
			c.pending[*head.ID] <- line
			delete(c.pending, *head.ID)
		}
		c.mu.Unlock()
	}
	c.cmd.Wait()
	close(c.done)
}

// send writes command op with a fresh id and returns the channel its result
// line arrives on.
func (c *Client) send(op map[string]any) (chan json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan json.RawMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	op["id"] = id
	b, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write to driver: %v", err)
	}
	return ch, nil
}

// wait waits up to timeout for the result line on ch.
func (c *Client) wait(ch chan json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line := <-ch:
		return line, nil
	case <-c.done:
		select {
		case line := <-ch:
			return line, nil
		default:
		}
		return nil, fmt.Errorf("driver exited (%v) without answering", c.cmd.ProcessState)
	case <-timer.C:
		return nil, fmt.Errorf("driver did not answer within %s", timeout)
	}
}

// do sends op and waits up to timeout for its result line.
func (c *Client) do(op map[string]any, timeout time.Duration) (json.RawMessage, error) {
	ch, err := c.send(op)
	if err != nil {
		return nil, err
	}
	return c.wait(ch, timeout)
}

// must is do for the methods: a transport failure fails the test.
func (c *Client) must(op map[string]any, timeout time.Duration) json.RawMessage {
	c.t.Helper()
	line, err := c.do(op, timeout)
	if err != nil {
		c.t.Fatalf("driver %s: %v\nstderr:\n%s", op["op"], err, c.Stderr())
	}
	return line
}

// RPCError is a failed driver command: a JSON-RPC error from the server
// (Code set), or a failure inside the client such as a request timeout or a
// closed connection (Code nil).
type RPCError struct {
	Code    *int            `json:"code"`
	Message string          `json:"message"` // without the SDK's "MCP error C: " prefix
	Data    json.RawMessage `json:"data"`
}

func (e *RPCError) Error() string {
	if e.Code == nil {
		return "client error: " + e.Message
	}
	return fmt.Sprintf("json-rpc error %d: %s", *e.Code, e.Message)
}

// Tool is one entry of tools/list.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// Content is one content block of a tool result.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Result is a tools/call result as the client received it.
type Result struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// Text returns the text of the result's text blocks, joined by newlines.
func (r *Result) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// reply is the common shape of result lines.
type reply struct {
	OK    bool      `json:"ok"`
	Error *RPCError `json:"error"`
}

func (c *Client) decode(line json.RawMessage, v any) *RPCError {
	c.t.Helper()
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		c.t.Fatalf("driver answered %q: %v", line, err)
	}
	if !r.OK {
		if r.Error == nil {
			r.Error = &RPCError{Message: "driver answered ok=false without an error: " + string(line)}
		}
		return r.Error
	}
	if err := json.Unmarshal(line, v); err != nil {
		c.t.Fatalf("driver answered %q: %v", line, err)
	}
	return nil
}

// List sends tools/list (following nextCursor) and returns the tools.
func (c *Client) List() ([]Tool, *RPCError) {
	c.t.Helper()
	var out struct {
		Tools []Tool `json:"tools"`
	}
	if err := c.decode(c.must(map[string]any{"op": "list"}, opTimeout), &out); err != nil {
		return nil, err
	}
	return out.Tools, nil
}

// ToolNames returns the names of tools in order.
func ToolNames(tools []Tool) []string {
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	return names
}

// callTimeout is the timeout of a tools/call request inside the client.
// The example's tools answer in milliseconds; a call caught in a restart
// waits for the new server to start.
const callTimeout = 20 * time.Second

// Call sends tools/call name with args (nil for none) and returns the
// result, or the error the client reported.
func (c *Client) Call(name string, args any) (*Result, *RPCError) {
	c.t.Helper()
	return c.CallAsync(name, args).Wait()
}

// Pending is a tools/call on its way.
type Pending struct {
	c        *Client
	ch       chan json.RawMessage
	timeout  time.Duration
	reset    bool // the timeout restarts at each progress notification
	progress []Progress
}

// CallAsync sends tools/call name with args and returns at once; Wait for
// the outcome. Calls in flight at once are answered in completion order.
func (c *Client) CallAsync(name string, args any) *Pending {
	c.t.Helper()
	return c.CallWith(name, args, CallOptions{})
}

// CallOptions are the TypeScript SDK's request options of one tools/call.
type CallOptions struct {
	// Timeout is the client's request timeout (the SDK's timeout); zero
	// is the helpers' 20 s.
	Timeout time.Duration
	// Progress sends a progressToken (the SDK's onprogress) and records
	// the notifications/progress that arrive for it ([Pending.Progress]).
	Progress bool
	// ResetTimeoutOnProgress restarts Timeout at each progress
	// notification (the SDK's option, off by default).
	ResetTimeoutOnProgress bool
}

// CallWith is CallAsync with the client's request options o.
func (c *Client) CallWith(name string, args any, o CallOptions) *Pending {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	if o.Timeout == 0 {
		o.Timeout = callTimeout
	}
	ch, err := c.send(map[string]any{"op": "call", "name": name, "arguments": args, "timeoutMs": o.Timeout.Milliseconds(),
		"progress": o.Progress, "resetTimeoutOnProgress": o.ResetTimeoutOnProgress})
	if err != nil {
		c.t.Fatalf("driver call %s: %v\nstderr:\n%s", name, err, c.Stderr())
	}
	return &Pending{c: c, ch: ch, timeout: o.Timeout, reset: o.ResetTimeoutOnProgress}
}

// Progress is one notifications/progress the client received for a call.
type Progress struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
}

// Wait returns the call's result, or the error the client reported. A
// call whose timeout restarts at each progress notification may take
// longer than its timeout: Wait gives it 2 minutes more.
func (p *Pending) Wait() (*Result, *RPCError) {
	p.c.t.Helper()
	limit := max(p.timeout, callTimeout) + opTimeout
	if p.reset {
		limit += 2 * time.Minute
	}
	line, err := p.c.wait(p.ch, limit)
	if err != nil {
		p.c.t.Fatalf("driver call: %v\nstderr:\n%s", err, p.c.Stderr())
	}
	var prog struct {
		Progress []Progress `json:"progress"`
	}
	json.Unmarshal(line, &prog)
	p.progress = prog.Progress
	var out struct {
		Result Result `json:"result"`
	}
	if err := p.c.decode(line, &out); err != nil {
		return nil, err
	}
	return &out.Result, nil
}

// Progress returns, after Wait, the notifications/progress the client
// received for a call sent with [CallOptions.Progress], in order.
func (p *Pending) Progress() []Progress { return p.progress }

// Events is what the client has seen outside request/response pairs.
type Events struct {
	// ListChanged counts notifications/tools/list_changed received.
	ListChanged int `json:"listChanged"`
	// Errors are the messages the SDK reported through Client.onerror, in
	// order; a response to an unknown or already answered request id shows
	// up here.
	Errors             []string        `json:"errors"`
	Closed             bool            `json:"closed"` // the connection to the server has closed
	ServerCapabilities json.RawMessage `json:"serverCapabilities"`
	ServerVersion      json.RawMessage `json:"serverVersion"`
}

// Events returns what the client has seen so far.
func (c *Client) Events() Events {
	c.t.Helper()
	var ev Events
	if err := c.decode(c.must(map[string]any{"op": "events"}, opTimeout), &ev); err != nil {
		c.t.Fatalf("driver events: %v", err)
	}
	return ev
}

// WaitListChanged waits up to timeout until at least n
// notifications/tools/list_changed have arrived in total, and returns the
// count; the error says how many came when fewer than n did.
func (c *Client) WaitListChanged(n int, timeout time.Duration) (int, error) {
	c.t.Helper()
	var out struct {
		ListChanged int `json:"listChanged"`
	}
	line := c.must(map[string]any{"op": "waitListChanged", "count": n, "timeoutMs": timeout.Milliseconds()}, timeout+opTimeout)
	if err := c.decode(line, &out); err != nil {
		return c.Events().ListChanged, errors.New(err.Message)
	}
	return out.ListChanged, nil
}

// Close closes the client as an MCP client does (end the server's stdin,
// then SIGTERM, then SIGKILL, 2 s apart) and waits for the driver to exit.
func (c *Client) Close() {
	c.t.Helper()
	line, err := c.do(map[string]any{"op": "close"}, opTimeout)
	if err != nil {
		c.t.Errorf("driver close: %v", err)
	} else if rerr := c.decode(line, &struct{}{}); rerr != nil {
		c.t.Errorf("driver close: %v", rerr)
	}
	c.shutdown(opTimeout)
}

// Exited reports whether the driver process has exited.
func (c *Client) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// shutdown ends the driver's stdin (which closes the client), waits up to
// timeout for it to exit, and then kills its process group.
func (c *Client) shutdown(timeout time.Duration) {
	c.closeOnce.Do(func() { c.stdin.Close() })
	select {
	case <-c.done:
		return
	case <-time.After(timeout):
	}
	c.t.Errorf("driver did not exit within %s of closing its input: killing its process group", timeout)
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
}

// PID returns the driver's process id, which is also its process group id.
func (c *Client) PID() int { return c.cmd.Process.Pid }

// Stderr returns what the driver, the server command and its children have
// written to stderr so far.
func (c *Client) Stderr() string { return c.stderr.String() }
