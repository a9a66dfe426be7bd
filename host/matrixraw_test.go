package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// teeTransport is mcp.CommandTransport keeping a copy of every byte the
// command writes to stdout: what a matrix cell compares, line by line,
// between a direct connection and one through the host.
type teeTransport struct {
	cmd *exec.Cmd
	raw *testenv.Buffer
}

func (tt *teeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := tt.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := tt.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := tt.cmd.Start(); err != nil {
		return nil, err
	}
	r := struct {
		io.Reader
		io.Closer
	}{io.TeeReader(stdout, tt.raw), io.NopCloser(nil)}
	return (&mcp.IOTransport{Reader: r, Writer: stdin}).Connect(ctx)
}

// connectGoRaw is connectGo through a teeTransport: raw gets the bytes
// cmd writes to stdout.
func connectGoRaw(t *testing.T, cmd *exec.Cmd, raw *testenv.Buffer, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpepoch-host-test", Version: "0.1.0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &teeTransport{cmd: cmd, raw: raw}, so)
	if err != nil {
		t.Fatalf("connect %v: %v\nstderr:\n%s", cmd.Args, err, stderr.String())
	}
	t.Cleanup(func() {
		closeGo(t, cs, cmd)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%v stderr:\n%s", cmd.Args, stderr.String())
		}
	})
	return cs
}

// answerLines returns the raw lines of raw that answer the cell's lists,
// calls and prompts (a result with tools, content, prompts or messages),
// in order, each with its id as "id":_: the host passes them byte for
// byte but for the id, which it maps back to the client's, and a client
// may number its requests differently through the host (the 2026-07-28
// client opens a listen stream where list_changed is advertised).
// Initialize and server/discover, whose capabilities the host sets, are
// not among them.
func answerLines(raw []byte) []string {
	var out []string
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var m struct {
			ID     json.RawMessage            `json:"id"`
			Method string                     `json:"method"`
			Result map[string]json.RawMessage `json:"result"`
			Error  json.RawMessage            `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 || (m.Result == nil && m.Error == nil) {
			continue
		}
		answer := m.Error != nil
		for _, k := range []string{"tools", "content", "prompts", "messages"} {
			_, ok := m.Result[k]
			answer = answer || ok
		}
		if !answer {
			continue
		}
		id := []byte(`"id":` + string(m.ID))
		out = append(out, string(bytes.Replace(line, id, []byte(`"id":_`), 1)))
	}
	return out
}
