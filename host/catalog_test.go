package host_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// eras are the two protocol eras a go-sdk client can speak to the host:
// "" is the SDK's default (server/discover, 2026-07-28), the other pins the
// initialize handshake.
var eras = []struct {
	name, pin, want string
}{
	{"stateless", "", statelessVersion},
	{"handshake", legacyVersion, legacyVersion},
}

// listChanged collects the list_changed notifications a go-sdk client
// receives.
type listChanged chan *mcp.ToolListChangedRequest

func (ch listChanged) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
		select {
		case ch <- req:
		default:
		}
	}}
}

// wait waits for the next notification.
func (ch listChanged) wait(t testing.TB) *mcp.ToolListChangedRequest {
	t.Helper()
	select {
	case req := <-ch:
		return req
	case <-time.After(waitLong):
		t.Fatalf("no notifications/tools/list_changed within %s", waitLong)
		return nil
	}
}

// rebuild rewrites server.sh with env and runs the build hook; the caller
// waits for list_changed.
func (p *project) rebuild(env map[string]string) {
	p.t.Helper()
	p.server("", env)
	p.record()
}

// A client that never re-lists after a rebuild is stopped before its stale
// call reaches new code: a schema that gained a required field, a removed
// tool, a changed default.
func TestToolChanged(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Run("required-field", func(t *testing.T) {
				p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
				notes := make(listChanged, 4)
				cs := goClient(t, p, notes.options(), era.pin, nil)
				if v := negotiated(cs); v != era.want {
					t.Fatalf("negotiated %q, want %s", v, era.want)
				}
				toolNames(t, cs)
				want := "publish_preview branch=main target=preview revision=A"
				if got := callText(t, cs, "publish_preview", map[string]any{"branch": "main"}); got != want {
					t.Fatalf("got %q, want %q", got, want)
				}

				p.rebuild(map[string]string{"FIXTURE_REVISION": "B", "FIXTURE_REQUIRED_FIELD": "ticket"})
				notes.wait(t)
				werr := callError(t, cs, "publish_preview", map[string]any{"branch": "main"})
				if werr.Code != host.CodeToolChanged || !strings.HasPrefix(werr.Message, "tool_changed:") {
					t.Fatalf("got error %d %q, want %d tool_changed", werr.Code, werr.Message, host.CodeToolChanged)
				}
				if !strings.Contains(werr.Message, "call again with arguments for that definition") {
					t.Errorf("tool_changed does not say what to do next: %q", werr.Message)
				}
				var data struct {
					Tool struct {
						Name        string `json:"name"`
						InputSchema struct {
							Required []string `json:"required"`
						} `json:"inputSchema"`
					} `json:"tool"`
				}
				if err := json.Unmarshal(werr.Data, &data); err != nil {
					t.Fatalf("error data %s: %v", werr.Data, err)
				}
				if data.Tool.Name != "publish_preview" || !slices.Contains(data.Tool.InputSchema.Required, "ticket") {
					t.Errorf("error data %s: want the current definition of publish_preview, requiring ticket", werr.Data)
				}
				want = "publish_preview branch=main target=preview ticket=T-1 revision=B"
				if got := callText(t, cs, "publish_preview", map[string]any{"branch": "main", "ticket": "T-1"}); got != want {
					t.Errorf("corrected call: got %q, want %q", got, want)
				}
			})

			t.Run("removed-tool", func(t *testing.T) {
				p := newProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "echo_a,echo_b"})
				notes := make(listChanged, 4)
				cs := goClient(t, p, notes.options(), era.pin, nil)
				toolNames(t, cs)
				callText(t, cs, "echo_a", nil)

				p.rebuild(map[string]string{"FIXTURE_EXTRA_TOOLS": "echo_b"})
				notes.wait(t)
				werr := callError(t, cs, "echo_a", nil)
				// The fixture itself would answer -32602.
				if werr.Code != host.CodeUnknownTool || !strings.HasPrefix(werr.Message, "unknown_tool:") {
					t.Fatalf("got error %d %q, want %d unknown_tool", werr.Code, werr.Message, host.CodeUnknownTool)
				}
				var data struct {
					Tool  string   `json:"tool"`
					Tools []string `json:"tools"`
				}
				json.Unmarshal(werr.Data, &data)
				if data.Tool != "echo_a" || slices.Contains(data.Tools, "echo_a") || !slices.Contains(data.Tools, "echo_b") {
					t.Errorf("error data %s", werr.Data)
				}
				callText(t, cs, "echo_b", nil)
			})

			t.Run("changed-default", func(t *testing.T) {
				p := newProject(t, map[string]string{"FIXTURE_TARGET_DEFAULT": "preview"})
				notes := make(listChanged, 4)
				cs := goClient(t, p, notes.options(), era.pin, nil)
				toolNames(t, cs)
				args := map[string]any{"branch": "main"} // valid before and after
				if got := callText(t, cs, "publish_preview", args); !strings.Contains(got, "target=preview") {
					t.Fatalf("got %q", got)
				}

				p.rebuild(map[string]string{"FIXTURE_TARGET_DEFAULT": "production"})
				notes.wait(t)
				werr := callError(t, cs, "publish_preview", args)
				if werr.Code != host.CodeToolChanged || !strings.HasPrefix(werr.Message, "tool_changed:") {
					t.Fatalf("got error %d %q, want %d tool_changed", werr.Code, werr.Message, host.CodeToolChanged)
				}
				var data struct {
					Defaults map[string]string `json:"defaults"`
				}
				if err := json.Unmarshal(werr.Data, &data); err != nil || data.Defaults["target"] != "production" {
					t.Errorf("error data %s: want defaults.target production", werr.Data)
				}
				if got := callText(t, cs, "publish_preview", args); !strings.Contains(got, "target=production") {
					t.Errorf("the identical call after the error: got %q, want target=production", got)
				}
			})
		})
	}
}

// Both eras see list_changed and the new tool after a rebuild: go-sdk in
// each era, and the TypeScript SDK (handshake era only).
func TestListChangedAfterRebuild(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run("go-sdk-"+era.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
			notes := make(listChanged, 4)
			cs := goClient(t, p, notes.options(), era.pin, nil)
			if v := negotiated(cs); v != era.want {
				t.Fatalf("negotiated %q, want %s", v, era.want)
			}
			if names := toolNames(t, cs); slices.Contains(names, "new_tool") {
				t.Fatalf("tools %q before the rebuild", names)
			}
			p.rebuild(map[string]string{"FIXTURE_REVISION": "B", "FIXTURE_EXTRA_TOOLS": "new_tool"})
			req := notes.wait(t)
			if era.pin == "" {
				// MCP 2026-07-28: tagged with the subscriptions/listen id.
				var id any
				if req.Params != nil {
					id = req.Params.Meta["io.modelcontextprotocol/subscriptionId"]
				}
				if id == nil || id == "" {
					t.Errorf("list_changed params %+v: no _meta subscriptionId", req.Params)
				}
			}
			if names := toolNames(t, cs); !slices.Contains(names, "new_tool") {
				t.Fatalf("tools %q after the rebuild: no new_tool", names)
			}
			if got := callText(t, cs, "new_tool", map[string]any{"x": 1}); got != `new_tool args={"x":1} revision=B` {
				t.Errorf("new_tool: got %q", got)
			}
		})
	}

	t.Run("ts-sdk", func(t *testing.T) {
		p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
		cl := testenv.Driver(t, p.dir, nil, append([]string{mcpepoch(t)}, p.hostArgs(nil)...)...)
		p.rebuild(map[string]string{"FIXTURE_REVISION": "B", "FIXTURE_EXTRA_TOOLS": "new_tool"})
		if _, err := cl.WaitListChanged(1, waitLong); err != nil {
			t.Fatal(err)
		}
		tools, rerr := cl.List()
		if rerr != nil {
			t.Fatal(rerr)
		}
		if names := testenv.ToolNames(tools); !slices.Contains(names, "new_tool") {
			t.Fatalf("tools %q after the rebuild: no new_tool", names)
		}
		res, rerr := cl.Call("new_tool", map[string]any{"x": 1})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if got := res.Text(); got != `new_tool args={"x":1} revision=B` {
			t.Errorf("new_tool: got %q", got)
		}
		if ev := cl.Events(); len(ev.Errors) != 0 {
			t.Errorf("client errors: %q", ev.Errors)
		}
	})
}

// A server that does not advertise tools.listChanged is still announced as
// advertising it, and the client still gets the notification.
func TestListChangedAdvertised(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FIXTURE_NO_LISTCHANGED": "1"}

	// The fixture really does not advertise it.
	p := newProject(t, env)
	direct := connectGo(t, p.command("sh", "./server.sh"), &testenv.Buffer{}, nil, "")
	if caps := direct.InitializeResult().Capabilities; caps == nil || caps.Tools == nil || caps.Tools.ListChanged {
		t.Fatalf("the fixture advertises %+v with FIXTURE_NO_LISTCHANGED=1", caps)
	}

	for _, era := range eras {
		t.Run("go-sdk-"+era.name, func(t *testing.T) {
			p := newProject(t, env)
			notes := make(listChanged, 4)
			cs := goClient(t, p, notes.options(), era.pin, nil)
			if v := negotiated(cs); v != era.want {
				t.Fatalf("negotiated %q, want %s", v, era.want)
			}
			if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Tools == nil || !caps.Tools.ListChanged {
				t.Errorf("capabilities %+v: want tools.listChanged true", caps)
			}
			p.rebuild(map[string]string{"FIXTURE_NO_LISTCHANGED": "1", "FIXTURE_REVISION": "B"})
			notes.wait(t)
		})
	}

	t.Run("ts-sdk", func(t *testing.T) {
		p := newProject(t, env)
		cl := testenv.Driver(t, p.dir, nil, append([]string{mcpepoch(t)}, p.hostArgs(nil)...)...)
		var caps struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		}
		ev := cl.Events()
		if err := json.Unmarshal(ev.ServerCapabilities, &caps); err != nil || !caps.Tools.ListChanged {
			t.Errorf("capabilities %s: want tools.listChanged true", ev.ServerCapabilities)
		}
		p.rebuild(map[string]string{"FIXTURE_NO_LISTCHANGED": "1", "FIXTURE_REVISION": "B"})
		if _, err := cl.WaitListChanged(1, waitLong); err != nil {
			t.Fatal(err)
		}
	})
}
