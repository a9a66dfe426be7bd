package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostProc is the mcpepoch host process the client launched.
type hostProc struct {
	cmd        *exec.Cmd
	stderrDone chan struct{} // closed when every writer of the host's stderr has exited
	closed     bool
}

// connect is step 3.
func (d *demo) connect(ctx context.Context) (*mcp.ClientSession, *hostProc, error) {
	d.heading("3. Connect an MCP client through mcpepoch host")
	d.out.line("", "the client launches: mcpepoch host -- ./bin/inventory-server   (in the project)")

	// The host's stderr (and its server's, which inherits it) goes to a
	// pipe of our own, so that it can be read to the end.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(d.bin, "host", "--", "./bin/inventory-server")
	cmd.Dir = d.proj
	cmd.Env = d.env("INVENTORY_DATA_DIR="+filepath.Join(d.proj, "data"), supplierVar+"="+supplierToken)
	cmd.Stderr = pw
	h := &hostProc{cmd: cmd, stderrDone: make(chan struct{})}
	go func() {
		defer close(h.stderrDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "mcpepoch host: "):
				d.out.line("[host]", "%s", d.short(strings.TrimPrefix(l, "mcpepoch host: ")))
			case strings.HasPrefix(l, "inventory-server: "):
				d.out.line("[server]", "%s", d.short(strings.TrimPrefix(l, "inventory-server: ")))
			default:
				d.out.line("[host]", "%s", d.short(l))
			}
		}
		pr.Close()
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "mcpepoch-demo", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			d.out.line("[client]", "← notifications/tools/list_changed")
			select {
			case d.notices <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	session, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: d.protocol})
	pw.Close() // the host has its own copy now, or never started
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		waitOrTimeout(h.stderrDone, 5*time.Second)
		return nil, nil, d.fail("connect: %v", err)
	}
	res := session.InitializeResult()
	d.out.line("[client]", "connected: protocol %s, server %s %s", res.ProtocolVersion, res.ServerInfo.Name, res.ServerInfo.Version)
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		session.Close()
		return nil, nil, d.fail("the initialize result does not advertise capabilities.tools.listChanged")
	}
	d.out.line("[client]", "capabilities.tools.listChanged = true (the host always advertises it)")
	return session, h, nil
}

// disconnect closes the session and waits for the host and its server to
// exit. It is safe to call twice.
func (d *demo) disconnect(session *mcp.ClientSession, h *hostProc) error {
	if h.closed {
		return nil
	}
	h.closed = true
	err := session.Close()
	if !waitOrTimeout(h.stderrDone, 15*time.Second) {
		return errors.New("the host or its server did not exit within 15s of the client closing the connection")
	}
	if err != nil {
		return fmt.Errorf("close: %v", err)
	}
	return nil
}

func waitOrTimeout(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// listTools lists the tools and returns their names, sorted.
func (d *demo) listTools(ctx context.Context, s *mcp.ClientSession) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d.out.line("[client]", "→ tools/list")
	res, err := s.ListTools(cctx, nil)
	if err != nil {
		return nil, d.fail("tools/list: %v", err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	d.out.line("[client]", "← %d tools: %s", len(names), strings.Join(names, ", "))
	return names, nil
}

// call calls a tool and returns its text; a tool error is an error.
func (d *demo) call(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	a, _ := json.Marshal(args)
	d.out.line("[client]", "→ tools/call %s %s", name, a)
	res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", d.fail("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	text := strings.TrimRight(b.String(), "\n")
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			d.out.line("[client]", "← %s", l)
		} else {
			d.out.line("[client]", "  %s", l)
		}
	}
	if res.IsError {
		return text, d.fail("tools/call %s: the tool reported an error: %s", name, text)
	}
	return text, nil
}

// refused calls a tool and expects the host to refuse the call with a
// JSON-RPC error of the given code.
func (d *demo) refused(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any, code int64) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	a, _ := json.Marshal(args)
	d.out.line("[client]", "→ tools/call %s %s", name, a)
	res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return d.fail("tools/call %s was answered (isError=%v); want the host's error %d", name, res.IsError, code)
	case !errors.As(err, &je):
		return d.fail("tools/call %s: %v; want the host's error %d", name, err, code)
	}
	d.out.line("[client]", "← error %d: %s", je.Code, je.Message)
	if je.Code != code {
		return d.fail("tools/call %s: error %d, want %d", name, je.Code, code)
	}
	return nil
}
