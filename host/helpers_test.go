package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// Protocol versions the tests pin or expect.
const (
	statelessVersion = "2026-07-28"
	legacyVersion    = "2025-11-25"
)

// waitLong bounds every wait for something that should happen within a
// second or two on an idle machine; it is generous so that a loaded
// machine does not fail a test.
const waitLong = 20 * time.Second

// listeningRe matches the line the host logs once its socket listens:
// the agent run and the socket's path.
var listeningRe = regexp.MustCompile(`(?m)agent run (\S+): listening on (.+)$`)

// minParallel is how many tests run at once, at least, when go test is
// given no -parallel flag (see testenv.WidenParallel): most tests here
// wait on the host and server processes they start, not on the CPU.
const minParallel = 4

// TestMain gives the tests of this process a directory of their own for
// the trust store's config directory, removed at the end, and runs more
// tests at once than there are cores.
func TestMain(m *testing.M) {
	testenv.OwnSession() // the person checks see other packages' hosts
	testenv.WidenParallel(minParallel)
	remove := testenv.UserConfig()
	code := m.Run()
	stopChromium()
	remove()
	os.Exit(code)
}

// buildServer returns the path of a test server built from the main
// package in pkg (relative to the repository root), shared with other
// test processes (testenv.Build): testdata/servers/fixture (go-sdk),
// host/testdata/bigserver (raw NDJSON, large results), lateserver
// (answers late), echoserver (echoes what it read), askserver (asks the
// client), credserver, fakesshkeygen (ssh-keygen -Y sign with a software
// key), examples/inventory-go. Tests copy it into their project.
func buildServer(t testing.TB, pkg string) string {
	t.Helper()
	return testenv.Build(t, "./"+pkg)
}

// project is a temporary project directory served by the fixture:
//
//	bin/fixture     a copy of the fixture binary
//	server.sh       sets FIXTURE_* variables and execs bin/fixture; it is
//	                the entry of the launch command "sh ./server.sh", so
//	                rewriting it changes the identity the host computes
//	mcpepoch.toml   command = ["sh", "./server.sh"], for mcpepoch record, and
//	                every tool exempt from grants
//	counter/        FIXTURE_COUNTER_DIR
type project struct {
	t       testing.TB
	dir     string
	counter string
}

// newProject makes a project whose server.sh exports env.
func newProject(t testing.TB, env map[string]string) *project {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &project{t: t, dir: dir, counter: filepath.Join(dir, "counter")}
	for _, d := range []string{"bin", "counter"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, buildServer(t, "testdata/servers/fixture"), filepath.Join(dir, "bin", "fixture"))
	// Grants are not what these tests are about: every tool is exempt.
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[grants]\nexempt = [\"**\"]\n")
	p.server("", env)
	return p
}

// server rewrites server.sh: pre (shell lines, may be empty), then the
// exports of env in name order, then exec ./bin/fixture.
func (p *project) server(pre string, env map[string]string) {
	p.t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString(pre)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "export %s='%s'\n", k, env[k])
	}
	b.WriteString("exec ./bin/fixture\n")
	p.write("server.sh", b.String())
}

// write replaces the file name in the project atomically, as a build does.
func (p *project) write(name, content string) {
	p.t.Helper()
	dst := filepath.Join(p.dir, name)
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) path(name string) string { return filepath.Join(p.dir, name) }

// read returns the content of a project file, "" when it does not exist.
func (p *project) read(name string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		p.t.Fatal(err)
	}
	return string(b)
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// mcpepoch returns the path of the mcpepoch binary.
func mcpepoch(t testing.TB) string {
	t.Helper()
	return testenv.Mcpepoch(t)
}

// cli runs mcpepoch args… in the project and returns its output; a
// non-zero exit fails the test.
func (p *project) cli(args ...string) testenv.Output {
	p.t.Helper()
	out, code := testenv.Run(p.t, p.dir, nil, mcpepoch(p.t), args...)
	if code != 0 {
		p.t.Fatalf("mcpepoch %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// restart runs mcpepoch restart and returns how long it took.
func (p *project) restart() time.Duration {
	p.t.Helper()
	start := time.Now()
	p.cli("restart", "--dir", p.dir)
	return time.Since(start)
}

// record runs mcpepoch record (the build hook) and returns its JSON.
func (p *project) record() string {
	p.t.Helper()
	return p.cli("record", "--dir", p.dir, "--json").Stdout
}

// status returns the status of the project's only host.
func (p *project) status() host.Status {
	p.t.Helper()
	s, _ := p.statusCode()
	return s
}

// statusCode is status with the exit status of mcpepoch status: 0, 4 (a
// host in error, given up, or failed the handshake) or 6 (starting); any
// other fails the test.
func (p *project) statusCode() (host.Status, int) {
	p.t.Helper()
	out, code := testenv.Run(p.t, p.dir, nil, mcpepoch(p.t), "status", "--dir", p.dir, "--json")
	if code != 0 && code != 4 && code != 6 {
		p.t.Fatalf("mcpepoch status --json: exit %d\n%s", code, out)
	}
	var all []host.Status
	if err := json.Unmarshal([]byte(out.Stdout), &all); err != nil {
		p.t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(all) != 1 {
		p.t.Fatalf("status --json: %d hosts, want 1\n%s", len(all), out)
	}
	return all[0], code
}

// waitState polls the host's status until its state is s.
func (p *project) waitState(s host.State, timeout time.Duration) host.Status {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := p.status()
		if st.State == s {
			return st
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("host state %s after %s, want %s (reason %q)", st.State, timeout, s, st.Reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bg is a command running in the background.
type bg struct {
	cmd   *exec.Cmd
	start time.Time
	out   bytes.Buffer
	done  chan struct{}
	took  time.Duration
	err   error
}

// background starts mcpepoch args… in the project; it is killed in
// t.Cleanup if still running.
func (p *project) background(args ...string) *bg {
	p.t.Helper()
	cmd := exec.Command(mcpepoch(p.t), args...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	b := &bg{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &b.out, &b.out
	cmd.WaitDelay = 5 * time.Second // a process left behind holding the output pipe does not hold up the test
	b.start = time.Now()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() {
		b.err = cmd.Wait()
		b.took = time.Since(b.start)
		close(b.done)
	}()
	p.t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// wait waits for the command to exit successfully.
func (b *bg) wait(t testing.TB) time.Duration {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(testenv.CommandTimeout):
		t.Fatalf("%v: no exit within %s", b.cmd.Args, testenv.CommandTimeout)
	}
	if b.err != nil {
		t.Fatalf("%v: %v\n%s", b.cmd.Args, b.err, b.out.String())
	}
	return b.took
}

// command returns name args… to run in the project with the test's
// environment, not started.
func (p *project) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	return cmd
}

// hostArgs is the argument list of mcpepoch host for the project.
func (p *project) hostArgs(flags []string, command ...string) []string {
	if len(command) == 0 {
		command = []string{"sh", "./server.sh"}
	}
	args := append([]string{"host", "--dir", p.dir}, flags...)
	return append(append(args, "--"), command...)
}

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// wire is one message the raw client received.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *wireError      `json:"error"`
	at      time.Time
	seq     int // position among all messages received
}

// text returns the text of the first content block of a tools/call result.
func (w *wire) text() string {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(w.Result, &r)
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// isError reports whether w is a tools/call result with isError true.
func (w *wire) isError() bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	json.Unmarshal(w.Result, &r)
	return r.IsError
}

func (w *wire) String() string {
	if w.Error != nil {
		return fmt.Sprintf("error %d %q data %s", w.Error.Code, w.Error.Message, w.Error.Data)
	}
	if w.Method != "" {
		return fmt.Sprintf("%s %s", w.Method, w.Params)
	}
	return "result " + string(w.Result)
}

// raw is a line-level MCP client of mcpepoch host: it writes JSON-RPC lines
// itself and records every line the host writes, so that tests can count
// answers per id and check that every line is a JSON-RPC message.
type raw struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr testenv.Buffer
	wmu    sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever something arrives
	msgs    []*wire
	lines   []string // msgs as received, byte for byte
	invalid []string // lines that are not JSON-RPC 2.0 messages
	nextID  int

	done    chan struct{}
	waitErr error
}

// startRaw starts mcpepoch host for the project with flags and the server
// command (default sh ./server.sh) under a raw client.
func startRaw(t testing.TB, p *project, flags []string, command ...string) *raw {
	t.Helper()
	return startRawEnv(t, p, nil, flags, command...)
}

// startRawEnv is startRaw with env ("NAME=value") added to the host's
// environment, which is its server's.
func startRawEnv(t testing.TB, p *project, env, flags []string, command ...string) *raw {
	t.Helper()
	cmd := exec.Command(mcpepoch(t), p.hostArgs(flags, command...)...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ(env...)
	c := &raw{t: t, cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(stdout)
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			t.Errorf("mcpepoch host did not exit within 15s of its stdin closing: killing it")
			cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("mcpepoch host stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

func (c *raw) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.note(bytes.TrimSuffix(line, []byte("\n")), err != nil)
		}
		if err != nil {
			break
		}
	}
	c.waitErr = c.cmd.Wait()
	c.mu.Lock()
	close(c.done)
	c.signalLocked()
	c.mu.Unlock()
}

func (c *raw) note(line []byte, partial bool) {
	var w wire
	err := json.Unmarshal(line, &w)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case partial:
		c.invalid = append(c.invalid, "no newline at end: "+string(line))
	case err != nil || line[0] != '{' || w.JSONRPC != "2.0":
		c.invalid = append(c.invalid, string(line))
	default:
		w.at, w.seq = time.Now(), len(c.msgs)
		c.msgs = append(c.msgs, &w)
		c.lines = append(c.lines, string(line))
	}
	c.signalLocked()
}

func (c *raw) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor waits until cond (called with c.mu held) holds; after timeout,
// or at once when the host has exited and cond still does not hold, it
// fails the test, saying what it waited for.
func (c *raw) waitFor(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		exited := closed(c.done) // done is closed under c.mu, after the last line
		c.mu.Unlock()
		if ok {
			return
		}
		if exited {
			c.t.Fatalf("the host exited (%v) before %s; host stderr:\n%s", c.waitErr, what, c.stderr.String())
		}
		select {
		case <-ch:
		case <-timer.C:
			c.t.Fatalf("waited %s for %s; host stderr:\n%s", timeout, what, c.stderr.String())
		}
	}
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// send writes v as one line.
func (c *raw) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendLine(b)
}

func (c *raw) sendLine(b []byte) {
	c.t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to mcpepoch host: %v", err)
	}
}

// request sends a request with a fresh numeric id and returns the id.
func (c *raw) request(method string, params any) string {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
	return strconv.Itoa(id)
}

// notify sends a notification.
func (c *raw) notify(method string, params any) {
	c.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
}

// responsesLocked returns the responses to id (its JSON text) so far.
func (c *raw) responsesLocked(id string) []*wire {
	var out []*wire
	for _, m := range c.msgs {
		if m.Method == "" && string(bytes.TrimSpace(m.ID)) == id {
			out = append(out, m)
		}
	}
	return out
}

// responses returns the responses to id so far.
func (c *raw) responses(id string) []*wire {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.responsesLocked(id)
}

// response waits for the first response to id.
func (c *raw) response(id string, timeout time.Duration) *wire {
	c.t.Helper()
	var r *wire
	c.waitFor(timeout, "the response to id "+id, func() bool {
		if rs := c.responsesLocked(id); len(rs) > 0 {
			r = rs[0]
			return true
		}
		return false
	})
	return r
}

// roundTrip sends a request and waits for its response.
func (c *raw) roundTrip(method string, params any) *wire {
	c.t.Helper()
	return c.response(c.request(method, params), waitLong)
}

// initialize runs the handshake of protocol version 2025-11-25.
func (c *raw) initialize() *wire {
	c.t.Helper()
	r := c.roundTrip("initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpepoch-host-test", "version": "0.1.0"},
	})
	if r.Error != nil {
		c.t.Fatalf("initialize: %v", r)
	}
	c.notify("notifications/initialized", nil)
	return r
}

// call sends tools/call and returns its id.
func (c *raw) call(name string, args map[string]any) string {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return c.request("tools/call", map[string]any{"name": name, "arguments": args})
}

// callWait sends tools/call and waits for the answer.
func (c *raw) callWait(name string, args map[string]any) *wire {
	c.t.Helper()
	return c.response(c.call(name, args), waitLong)
}

// listTools sends tools/list and returns the tool names.
func (c *raw) listTools() []string {
	c.t.Helper()
	r := c.roundTrip("tools/list", nil)
	if r.Error != nil {
		c.t.Fatalf("tools/list: %v", r)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// notifications returns the notifications named method received so far.
func (c *raw) notifications(method string) []*wire {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*wire
	for _, m := range c.msgs {
		if m.Method == method && len(m.ID) == 0 {
			out = append(out, m)
		}
	}
	return out
}

// waitNotifications waits until n notifications named method have arrived.
func (c *raw) waitNotifications(method string, n int, timeout time.Duration) {
	c.t.Helper()
	c.waitFor(timeout, fmt.Sprintf("%d %s notifications", n, method), func() bool {
		k := 0
		for _, m := range c.msgs {
			if m.Method == method && len(m.ID) == 0 {
				k++
			}
		}
		return k >= n
	})
}

// invalidLines returns the lines the host wrote that are not JSON-RPC.
func (c *raw) invalidLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.invalid)
}

func (c *raw) pid() int { return c.cmd.Process.Pid }

// wantError checks that r is a JSON-RPC error with code and a message
// starting with prefix.
func wantError(t testing.TB, r *wire, code int, prefix string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("got %v, want error %d %s…", r, code, prefix)
	}
	if r.Error.Code != code || !strings.HasPrefix(r.Error.Message, prefix) {
		t.Fatalf("got error %d %q, want %d %s…", r.Error.Code, r.Error.Message, code, prefix)
	}
}

// wantNext checks that r's error message says what to do next: it holds
// each of next (issue 28 §4: every error the host sends a client names
// the next step, in the README's words).
func wantNext(t testing.TB, r *wire, next ...string) {
	t.Helper()
	for _, n := range next {
		if r.Error == nil || !strings.Contains(r.Error.Message, n) {
			t.Errorf("error %v does not say what to do next: want %q in its message", r.Error, n)
		}
	}
}

// wantText checks that r is a successful tool result whose text contains
// want.
func wantText(t testing.TB, r *wire, want string) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("got %v, want a result containing %q", r, want)
	}
	if !strings.Contains(r.text(), want) {
		t.Fatalf("got result %s, want text containing %q", r.Result, want)
	}
}

// goClient connects a go-sdk client to mcpepoch host for the project.
// version pins ClientSessionOptions.ProtocolVersion ("" for the SDK's
// default, which probes server/discover first). The session is closed in
// t.Cleanup.
func goClient(t testing.TB, p *project, opts *mcp.ClientOptions, version string, flags []string, command ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(mcpepoch(t), p.hostArgs(flags, command...)...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	return connectGo(t, cmd, stderr, opts, version)
}

// connectGo connects a go-sdk client to the stdio server cmd.
func connectGo(t testing.TB, cmd *exec.Cmd, stderr *testenv.Buffer, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpepoch-host-test", Version: "0.1.0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	// A host given 10 s to exit after its stdin closes is not SIGTERMed
	// on a loaded machine: a test that checks a clean exit sees one.
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, so)
	if err != nil {
		t.Fatalf("connect %v: %v\nstderr:\n%s", cmd.Args, err, stderr.String())
	}
	t.Cleanup(func() {
		closeGo(t, cs, cmd)
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%v stderr:\n%s", cmd.Args, stderr.String())
		}
	})
	return cs
}

// closeWait bounds closeGo: the transport's own close of a host that
// exits takes at most 10 s (stdin closed) + 10 s (SIGTERM); the rest is
// margin for a loaded machine.
const closeWait = 30 * time.Second

// closeGo closes a go-sdk session with the host cmd and returns Close's
// error. Close first waits for the client's calls in flight, and one the
// host holds (for an approval, up to grants.approval_wait) would keep a
// failing test for minutes: if Close has not returned within closeWait,
// the test fails saying so and the host is killed, which ends those calls.
func closeGo(t testing.TB, cs *mcp.ClientSession, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cs.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeWait):
	}
	t.Errorf("the client session did not close within %s (a call in flight held it): killing the host", closeWait)
	cmd.Process.Kill()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLong):
		return errors.New("the client session did not close after the host was killed")
	}
}

// negotiated returns the protocol version of a go-sdk session.
func negotiated(cs *mcp.ClientSession) string {
	if r := cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// callText calls a tool through a go-sdk session and returns its text.
func callText(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("call %s: tool error or empty result: %+v", name, res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content %T, want text", name, res.Content[0])
	}
	return tc.Text
}

// callError calls a tool through a go-sdk session and returns the JSON-RPC
// error it must fail with.
func callError(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *jsonrpc.Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("call %s: got result %+v, error %v; want a JSON-RPC error", name, res, err)
	}
	return werr
}

// toolNames lists tools through a go-sdk session.
func toolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// needProc skips a test that reads /proc where there is none.
func needProc(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
}

// procStat is what the tests read of /proc/<pid>/stat.
type procStat struct {
	state      string
	utime      int64 // clock ticks
	stime      int64
	ppid, pgrp int
}

// readStat parses /proc/<pid>/stat ("pid (comm) state ppid pgrp … utime
// stime …", comm may hold spaces and parentheses).
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var st procStat
	st.state = f[0]
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.utime, _ = strconv.ParseInt(f[11], 10, 64)
	st.stime, _ = strconv.ParseInt(f[12], 10, 64)
	return st, nil
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if runtime.GOOS == "linux" {
		st, err := readStat(pid)
		return err == nil && st.state != "Z" && st.state != "X"
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// waitGone waits up to timeout for pid to be gone and reports whether it is.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// processesOf returns the live processes whose executable is exe.
func processesOf(t testing.TB, exe string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && l == exe && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readPID reads a FIXTURE_PID_FILE, waiting for it to appear.
func readPID(t testing.TB, file string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(file)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %q", file, b)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", file, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killOnCleanup SIGKILLs pid at the end of the test if it is still the
// same process: a test that fails must not leave an unkillable fixture
// behind (see testenv.KillOnCleanup).
func killOnCleanup(t testing.TB, pid int) { testenv.KillOnCleanup(t, pid) }

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// parseAuditRecords decodes the output of mcpepoch audit show --json.
func parseAuditRecords(t testing.TB, stdout string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit show --json: %v\n%s", err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	return recs
}
