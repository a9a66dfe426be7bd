package host_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// BenchmarkGateway measures what mcpepoch host adds to a tools/call, side by
// side in one run: the same server binary, the same go-sdk client, once
// connected directly and once through the host.
//
//	small/direct, small/via-host  the fixture's version tool (a ~100-byte
//	                              result): latency per request
//	1MiB/direct, 1MiB/via-host    bigserver's big tool (a 1 MiB text
//	                              result): throughput (MB/s)
//
// scripts/bench-gateway.sh runs it and prints the via-host/direct ratios.
func BenchmarkGateway(b *testing.B) {
	p := newProject(b, nil)
	copyFile(b, buildServer(b, "host/testdata/bigserver"), p.path("bin/bigserver"))
	for _, bc := range []struct {
		name   string
		server string
		tool   string
		bytes  int64
	}{
		{"small", "./bin/fixture", "version", 0},
		{"1MiB", "./bin/bigserver", "big", 1 << 20},
	} {
		for _, via := range []bool{false, true} {
			name := bc.name + "/direct"
			if via {
				name = bc.name + "/via-host"
			}
			b.Run(name, func(b *testing.B) {
				cmd := p.command(bc.server)
				if via {
					cmd = p.command(mcpepoch(b), p.hostArgs(nil, bc.server)...)
				}
				cs := connectGo(b, cmd, &testenv.Buffer{}, nil, "")
				params := &mcp.CallToolParams{Name: bc.tool, Arguments: map[string]any{}}
				ctx := context.Background()
				call := func() {
					res, err := cs.CallTool(ctx, params)
					if err != nil {
						b.Fatal(err)
					}
					if res.IsError || len(res.Content) != 1 {
						b.Fatalf("result %+v", res)
					}
					if bc.bytes > 0 && int64(len(res.Content[0].(*mcp.TextContent).Text)) != bc.bytes {
						b.Fatalf("result of %d bytes, want %d", len(res.Content[0].(*mcp.TextContent).Text), bc.bytes)
					}
				}
				call() // the host fetches its first catalog meanwhile
				b.SetBytes(bc.bytes)
				b.ResetTimer()
				for b.Loop() {
					call()
				}
			})
		}
	}
}
