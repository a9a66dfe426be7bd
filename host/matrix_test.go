package host_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The interop matrix: real clients × real servers, each cell run through
// the host and compared with a direct connection. It runs when
// MCPEPOCH_MATRIX=1 (.ci/run sets it); README's "Interop matrix" shows
// what each cell checks.

// mServer is one server of the matrix, served from a project whose
// server.sh (the identity's entry) execs it; rev rewrites server.sh for
// revision R, so that a build changes the epoch.
type mServer struct {
	name    string
	project func(t *testing.T) (p *project, rev func(r string))
	tool    string         // the tool each cell calls; "" for a prompts-only server
	args    map[string]any // its arguments
	fixture bool           // has slow_write and ask: in-flight and server→client steps
}

func fixtureServer(env map[string]string) func(t *testing.T) (*project, func(string)) {
	return func(t *testing.T) (*project, func(string)) {
		p := newProject(t, nil)
		rev := func(r string) {
			e := map[string]string{"FIXTURE_REVISION": r, "FIXTURE_COUNTER_DIR": p.counter}
			for k, v := range env {
				e[k] = v
			}
			if r != "A" && e["FIXTURE_PROMPTS"] != "" {
				e["FIXTURE_PROMPTS"] += ",new_prompt"
			}
			p.server("", e)
		}
		rev("A")
		return p, rev
	}
}

// execServer serves command from a fixture-style project.
func execServer(command func(t *testing.T) string) func(t *testing.T) (*project, func(string)) {
	return func(t *testing.T) (*project, func(string)) {
		p := newProject(t, nil)
		cmd := command(t)
		rev := func(r string) {
			p.write("server.sh", "#!/bin/sh\n# revision "+r+"\nexport INVENTORY_DATA_DIR=data\nexec "+cmd+"\n")
		}
		rev("A")
		return p, rev
	}
}

var mServers = []mServer{
	{name: "fixture", project: fixtureServer(map[string]string{"FIXTURE_FEATURES": "1"}),
		tool: "version", args: map[string]any{}, fixture: true},
	{name: "prompts-only", project: fixtureServer(map[string]string{"FIXTURE_NO_TOOLS": "1", "FIXTURE_PROMPTS": "greet"})},
	{name: "inventory-go", project: execServer(func(t *testing.T) string {
		return buildServer(t, "examples/inventory-go")
	}), tool: "inventory_lookup", args: map[string]any{"sku": "A-1"}},
	{name: "inventory-node", project: execServer(func(t *testing.T) string {
		return "node " + testenv.NodeExample(t) + "/dist/server.js"
	}), tool: "inventory_lookup", args: map[string]any{"sku": "A-1"}},
}

// interopDir holds the npm peers of the matrix: server-everything, and
// MCP Inspector CLI 2.x with the node 22 it needs.
func interopDir(t *testing.T) string {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "interop")
	testenv.NPM(t, dir)
	return dir
}

func init() {
	mServers = append(mServers, mServer{name: "server-everything", project: execServer(func(t *testing.T) string {
		return "node " + interopDir(t) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"
	}), tool: "echo", args: map[string]any{"message": "<hi & bye>"}})
}

// goEras are the go-sdk client's three eras: "" probes server/discover.
var goEras = []struct{ name, pin string }{
	{"2026-07-28", ""},
	{"2025-11-25", legacyVersion},
	{"2025-06-18", "2025-06-18"},
}

func TestInteropMatrix(t *testing.T) {
	if os.Getenv("MCPEPOCH_MATRIX") != "1" {
		t.Skip("the interop matrix runs with MCPEPOCH_MATRIX=1 (.ci/run)")
	}
	for _, s := range mServers {
		for _, era := range goEras {
			t.Run("go-sdk-"+era.name+"/"+s.name, func(t *testing.T) { goCell(t, s, era.pin) })
		}
		if s.tool != "" {
			t.Run("ts-sdk/"+s.name, func(t *testing.T) { tsCell(t, s) })
			t.Run("inspector-2/"+s.name, func(t *testing.T) { inspectorCell(t, s) })
		}
	}
}

// mJSON is v as JSON, for comparing a result through the host with the
// same result on a direct connection.
func mJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goSnapshot lists and calls (or, prompts-only, gets a prompt) and returns
// both results as JSON.
func goSnapshot(t *testing.T, cs *mcp.ClientSession, s mServer) (list, call string) {
	ctx := ctxLong(t)
	if s.tool == "" {
		lr, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		gr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
		if err != nil {
			t.Fatalf("prompts/get: %v", err)
		}
		return mJSON(t, lr.Prompts), mJSON(t, gr)
	}
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	cr, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
	if err != nil {
		t.Fatalf("call %s: %v", s.tool, err)
	}
	return mJSON(t, lr.Tools), mJSON(t, cr)
}

func goCell(t *testing.T, s mServer, pin string) {
	p, rev := s.project(t)
	direct := p.command("sh", "./server.sh")
	var directRaw, hostRaw testenv.Buffer
	dcs := connectGoRaw(t, direct, &directRaw, nil, pin)
	wantList, wantCall := goSnapshot(t, dcs, s)
	want := negotiated(dcs) // a handshake-only server: the probing client falls back on both
	dcs.Close()
	wantRaw := answerLines([]byte(directRaw.String()))
	if len(wantRaw) < 2 {
		t.Fatalf("direct connection: %d answers seen on stdout, want the list's and the call's:\n%s", len(wantRaw), directRaw.String())
	}
	// Server→client requests exist in the handshake era only; in
	// 2026-07-28 they are input_required results.
	asks := s.fixture && want != statelessVersion

	n := newNotes()
	opts := n.options()
	opts.ElicitationHandler = nil
	hc := exec.Command(mcpepoch(t), p.hostArgs(nil)...)
	hc.Dir, hc.Env = p.dir, testenv.Environ()
	cs := connectGoRaw(t, hc, &hostRaw, opts, pin)
	if v := negotiated(cs); v != want {
		t.Fatalf("negotiated %q, want %s", v, want)
	}
	list, call := goSnapshot(t, cs, s)
	if list != wantList || call != wantCall {
		t.Fatalf("through the host:\n%s\n%s\ndirect:\n%s\n%s", list, call, wantList, wantCall)
	}
	// Byte for byte: every answer but initialize's and discover's.
	if got := answerLines([]byte(hostRaw.String())); !slices.Equal(got, wantRaw) {
		t.Fatalf("answers through the host, byte for byte:\n%s\ndirect:\n%s", strings.Join(got, "\n"), strings.Join(wantRaw, "\n"))
	}
	if asks {
		mAsk(t, cs, "A")
	}
	var inflight chan error
	if s.fixture {
		inflight = make(chan error, 1)
		go func() {
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{"key": "k", "delayMs": 20000}})
			inflight <- err
		}()
		waitFor(t, waitLong, "slow_write to start", func() bool { return p.read("counter/k.started") != "" })
	}
	rev("B")
	p.record()
	event := "tools/list_changed"
	if s.tool == "" {
		event = "prompts/list_changed"
	}
	n.wait(t, event, 1)
	if inflight != nil {
		var werr *jsonrpc.Error
		select {
		case err := <-inflight:
			if !errors.As(err, &werr) || werr.Code != host.CodeServerRestarted {
				t.Fatalf("the call in flight at the rebuild: %v, want one -31001", err)
			}
		case <-time.After(waitLong):
			t.Fatalf("the call in flight at the rebuild: no answer within %s, want one -31001", waitLong)
		}
	}
	list, call = goSnapshot(t, cs, s)
	if s.fixture && !strings.Contains(call, "revision=B") {
		t.Fatalf("call on the new epoch: %s", call)
	}
	if s.tool == "" && !strings.Contains(list, "new_prompt") {
		t.Fatalf("prompts on the new epoch: %s", list)
	}
	if asks {
		mAsk(t, cs, "B")
	}
	if st := p.status(); st.State != host.StateReady {
		t.Fatalf("host %s after the cell", st.State)
	}
}

// mAsk has the server ask the client for its roots, through the host.
func mAsk(t *testing.T, cs *mcp.ClientSession, rev string) {
	t.Helper()
	got := callText(t, cs, "ask", map[string]any{"method": "roots/list"})
	if want := "asked roots/list: "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "revision="+rev) {
		t.Fatalf("server→client request: %q", got)
	}
}

func tsCell(t *testing.T, s mServer) {
	p, rev := s.project(t)
	snapshot := func(cl *testenv.Client) (string, string) {
		tools, err := cl.List()
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		res, err := cl.Call(s.tool, s.args)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		return mJSON(t, tools), mJSON(t, res)
	}
	d := testenv.Driver(t, p.dir, nil, "sh", "./server.sh")
	wantList, wantCall := snapshot(d)
	d.Close()
	cl := testenv.Driver(t, p.dir, nil, append([]string{mcpepoch(t)}, p.hostArgs(nil)...)...)
	if l, c := snapshot(cl); l != wantList || c != wantCall {
		t.Fatalf("through the host:\n%s\n%s\ndirect:\n%s\n%s", l, c, wantList, wantCall)
	}
	var pending *testenv.Pending
	if s.fixture {
		pending = cl.CallAsync("slow_write", map[string]any{"key": "k", "delayMs": 20000})
		waitFor(t, waitLong, "slow_write to start", func() bool { return p.read("counter/k.started") != "" })
	}
	rev("B")
	p.record()
	if _, err := cl.WaitListChanged(1, waitLong); err != nil {
		t.Fatal(err)
	}
	if pending != nil {
		if _, err := pending.Wait(); err == nil || err.Code == nil || *err.Code != host.CodeServerRestarted {
			t.Fatalf("the call in flight at the rebuild: %v, want -31001", err)
		}
	}
	_, c := snapshot(cl)
	if s.fixture && !strings.Contains(c, "revision=B") {
		t.Fatalf("call on the new epoch: %s", c)
	}
	if ev := cl.Events(); len(ev.Errors) != 0 {
		t.Errorf("client errors (a second answer to one id shows here): %q", ev.Errors)
	}
}

// inspectorCell runs MCP Inspector CLI 2.x (node 22), a one-shot client:
// each invocation starts its own host. tools/list and tools/call print
// the same bytes through the host as directly, and after a rebuild the
// next invocation reaches the new code.
func inspectorCell(t *testing.T, s mServer) {
	dir := interopDir(t)
	node := filepath.Join(dir, "node_modules", "node", "bin", "node")
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	p, rev := s.project(t)
	call := []string{"--method", "tools/call", "--tool-name", s.tool}
	for k, v := range s.args {
		call = append(call, "--tool-arg", fmt.Sprintf("%s=%v", k, v))
	}
	inspect := func(server []string, method ...string) string {
		t.Helper()
		args := append(append([]string{cli, "--cli"}, server...), method...)
		if server[0] != "sh" {
			// The Inspector starts its server with a default environment of
			// its own: the host is given the tests' config directory.
			args = append(args, "-e", "XDG_CONFIG_HOME="+os.Getenv("XDG_CONFIG_HOME"))
		}
		out, code := testenv.Run(t, p.dir, nil, node, args...)
		if code != 0 {
			t.Fatalf("mcp-inspector %v: exit %d\n%s", method, code, out)
		}
		return out.Stdout
	}
	direct := []string{"sh", "./server.sh"}
	hosted := append([]string{mcpepoch(t)}, p.hostArgs(nil)...)
	for _, m := range [][]string{{"--method", "tools/list"}, call} {
		if got, want := inspect(hosted, m...), inspect(direct, m...); got != want {
			t.Fatalf("%v through the host:\n%s\ndirect:\n%s", m, got, want)
		}
	}
	rev("B")
	p.record()
	if got := inspect(hosted, call...); s.fixture && !strings.Contains(got, "revision=B") {
		t.Fatalf("after the rebuild: %s", got)
	}
}
