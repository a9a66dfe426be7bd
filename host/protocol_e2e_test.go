//lint:file-ignore SA1019 logging/setLevel is what handshake-era clients send; the host must replay it.

package host_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// notes counts the notifications a go-sdk client receives, by method.
type notes struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{}
}

func newNotes() *notes { return &notes{n: map[string]int{}, changed: make(chan struct{}, 64)} }

func (n *notes) add(method string) {
	n.mu.Lock()
	n.n[method]++
	n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

func (n *notes) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.n[method]
}

// wait waits until count(method) reaches want.
func (n *notes) wait(t testing.TB, method string, want int) {
	t.Helper()
	deadline := time.After(waitLong)
	for n.count(method) < want {
		select {
		case <-n.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d %s notifications within %s, want %d", n.count(method), method, waitLong, want)
		}
	}
}

// options returns client options that count every notification and
// answer elicitation by blocking until the request is cancelled.
func (n *notes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { n.add("tools/list_changed") },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { n.add("prompts/list_changed") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { n.add("resources/list_changed") },
		LoggingMessageHandler:      func(context.Context, *mcp.LoggingMessageRequest) { n.add("message") },
		ResourceUpdatedHandler:     func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { n.add("resources/updated") },
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n.add("elicitation")
			<-ctx.Done() // the dialog stays open until the server gives up
			n.add("elicitation cancelled")
			return nil, ctx.Err()
		},
	}
}

func ctxLong(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// A server with prompts and resources and no tools is not given a tools
// capability, its restarts work (the host used to take the failed
// tools/list for a failed start and go down), and the client hears of a
// changed prompt or resource list, and only then.
func TestServerWithoutTools(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FIXTURE_NO_TOOLS": "1", "FIXTURE_PROMPTS": "greet", "FIXTURE_RESOURCES": "doc"}
	p := newProject(t, env)
	n := newNotes()
	cs := goClient(t, p, n.options(), legacyVersion, nil)
	if caps := cs.InitializeResult().Capabilities; caps.Tools != nil || caps.Prompts == nil || caps.Resources == nil {
		t.Fatalf("capabilities %+v: want prompts and resources and no tools", caps)
	}
	prompt := func() string {
		res, err := cs.GetPrompt(ctxLong(t), &mcp.GetPromptParams{Name: "greet"})
		if err != nil {
			t.Fatalf("prompts/get: %v", err)
		}
		return res.Messages[0].Content.(*mcp.TextContent).Text
	}
	if got := prompt(); got != "prompt greet revision=A" {
		t.Fatalf("prompt: %q", got)
	}

	// A rebuild that changes the prompt list.
	env["FIXTURE_REVISION"], env["FIXTURE_PROMPTS"] = "B", "greet,bye"
	p.rebuild(env)
	n.wait(t, "prompts/list_changed", 1)
	if st := p.waitState(host.StateReady, waitLong); st.Execution == nil || st.Catalog != "" {
		t.Fatalf("status after the rebuild: %+v; want ready and no tool catalog", st)
	}
	if got := prompt(); got != "prompt greet revision=B" {
		t.Fatalf("prompt after the rebuild: %q", got)
	}
	res, err := cs.ListPrompts(ctxLong(t), nil)
	if err != nil || len(res.Prompts) != 2 {
		t.Fatalf("prompts/list after the rebuild: %+v, %v", res, err)
	}
	// Then one that changes the resource list only.
	env["FIXTURE_REVISION"], env["FIXTURE_RESOURCES"] = "C", "doc,more"
	p.rebuild(env)
	n.wait(t, "resources/list_changed", 1)
	if got := prompt(); got != "prompt greet revision=C" {
		t.Fatalf("prompt after the second rebuild: %q", got)
	}
	if got := n.count("prompts/list_changed"); got != 1 {
		t.Errorf("%d prompts/list_changed after a rebuild that kept the prompts, want 1 in all", got)
	}
	if got := n.count("tools/list_changed"); got != 0 {
		t.Errorf("%d tools/list_changed to a client never told of tools", got)
	}
}

// A tool the server adds at runtime, without a list_changed of its own,
// can be called at once: the host re-lists before it refuses a tool its
// catalog lacks.
func TestToolAddedAtRuntime(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"FIXTURE_FEATURES": "1", "FIXTURE_NO_LISTCHANGED": "1"})
			cs := goClient(t, p, nil, era.pin, nil)
			toolNames(t, cs)
			p.waitCatalog()
			if got := callText(t, cs, "add_tool", map[string]any{"name": "late"}); got != "added late revision=A" {
				t.Fatalf("add_tool: %q", got)
			}
			if got := callText(t, cs, "late", nil); got != "late called revision=A" {
				t.Fatalf("late: %q", got)
			}
			if werr := callError(t, cs, "never_added", nil); werr.Code != host.CodeUnknownTool {
				t.Fatalf("a tool nobody added: %v, want unknown_tool", werr)
			}
		})
	}
}

// A server that gives up on its own elicitation cancels it, and the
// client's dialog closes: the cancellation reaches the client under the
// id the client knows the request by, not the server's.
func TestServerCancelsItsRequest(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_FEATURES": "1"})
	n := newNotes()
	cs := goClient(t, p, n.options(), legacyVersion, nil)
	got := callText(t, cs, "ask", map[string]any{"method": "elicitation/create", "timeoutMs": 300})
	if got != "asked elicitation/create: cancelled revision=A" {
		t.Fatalf("ask: %q", got)
	}
	n.wait(t, "elicitation cancelled", 1)
}

// The log level and resource subscriptions a client set in the handshake
// era hold on the new epoch: the host replays them after initialize.
func TestSessionStateReplayed(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FIXTURE_FEATURES": "1", "FIXTURE_RESOURCES": "doc"}
	p := newProject(t, env)
	n := newNotes()
	cs := goClient(t, p, n.options(), legacyVersion, nil)
	if err := cs.SetLoggingLevel(ctxLong(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctxLong(t), &mcp.SubscribeParams{URI: "fixture://doc"}); err != nil {
		t.Fatal(err)
	}
	for i, rev := range []string{"A", "B"} {
		callText(t, cs, "log", map[string]any{"message": "hello"})
		callText(t, cs, "touch", map[string]any{"uri": "fixture://doc"})
		n.wait(t, "message", i+1)
		n.wait(t, "resources/updated", i+1)
		if rev == "A" {
			env["FIXTURE_REVISION"] = "B"
			p.rebuild(env)
			n.wait(t, "tools/list_changed", 1)
		}
	}
}

// A JSON-RPC batch is refused as a whole with -32600 and says so; nothing
// in it reaches the server.
func TestBatchRefused(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	c := startRaw(t, p, nil)
	c.initialize()
	c.sendLine([]byte(` [{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"version"}}]`))
	c.waitFor(waitLong, "the batch's refusal", func() bool { return len(c.responsesLocked("null")) > 0 })
	r := c.responses("null")[0]
	wantError(t, r, -32600, "invalid request: JSON-RPC batches are not supported")
	c.roundTrip("ping", nil)
	if got := c.responses("77"); len(got) != 0 {
		t.Errorf("a call inside the batch was answered: %v", got[0])
	}
}

// A client's initialize held while no server ever started (firststart.go)
// is answered, once host.first_start_wait has passed, with a message that
// says how the server exited.
func TestExitWhileStartingSaysSo(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.write("server.sh", "#!/bin/sh\nsleep 0.3\nexit 7\n")
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\n\n[host]\nfirst_start_wait = \"2s\"\n")
	cmd := exec.Command(mcpepoch(t), p.hostArgs(nil)...)
	cmd.Dir, cmd.Env = p.dir, testenv.Environ()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	_, err := client.Connect(ctxLong(t), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	t.Cleanup(func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("connect: %v, want a JSON-RPC error", err)
	}
	if werr.Code != host.CodeServerUnavailable || !strings.Contains(werr.Message, "not built yet") || !strings.Contains(werr.Message, "exit status 7") {
		t.Fatalf("got %d %q, want -31002 saying not built yet and the exit status", werr.Code, werr.Message)
	}
}

// The invalid_arguments text names a null argument in JSON's words.
func TestNullArgumentText(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	cs := goClient(t, p, nil, legacyVersion, nil)
	toolNames(t, cs)
	p.waitCatalog()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "publish_preview", Arguments: map[string]any{"branch": nil}})
	if err != nil {
		t.Fatal(err)
	}
	text := gText(res)
	if !res.IsError || !strings.HasPrefix(text, "invalid_arguments:") || strings.Contains(text, "reflect") || !strings.Contains(text, "null") {
		t.Fatalf("got isError %v %q", res.IsError, text)
	}
}

// The initialize result of a TypeScript SDK server reaches the client byte
// for byte as the server wrote it (its member order, "result" first; the
// host used to re-encode it with sorted keys), and a message the host
// writes keeps <, > and & as they are.
func TestInitializeResultBytes(t *testing.T) {
	t.Parallel()
	p := &project{t: t, dir: testenv.NodeExample(t)}
	init := `{"jsonrpc":"2.0","id":100,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"<t&t>","version":"1"}}}`
	direct := exec.Command("node", "dist/server.js")
	direct.Dir = p.dir
	direct.Stdin = strings.NewReader(init + "\n")
	out, err := direct.Output()
	if err != nil {
		t.Fatalf("node dist/server.js: %v", err)
	}
	want := strings.SplitN(string(out), "\n", 2)[0]

	c := startRaw(t, p, nil, "node", "dist/server.js")
	c.sendLine([]byte(init))
	c.response("100", waitLong)
	if got := c.lineOf("100"); got != want {
		t.Fatalf("initialize result through the host:\n%s\ndirect:\n%s", got, want)
	}
	c.notify("notifications/initialized", nil)
	id := c.call("<no&such>", nil)
	c.response(id, waitLong)
	if got := c.lineOf(id); !strings.Contains(got, `<no&such>`) || strings.Contains(got, `\u003c`) {
		t.Fatalf("the host's refusal escapes the tool name: %s", got)
	}
}

// lineOf returns the line of the first response to id, as received.
func (c *raw) lineOf(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.msgs {
		if m.Method == "" && string(m.ID) == id {
			return c.lines[i]
		}
	}
	return ""
}
