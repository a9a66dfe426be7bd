// Command inventory-server is a small stdio MCP server used to show and test
// mcpepoch. It is the Go twin of examples/inventory-node.
//
// It keeps stock counts in a JSON file, <data dir>/inventory.json, shaped
//
//	{"stock": {"<sku>": <quantity>, ...},
//	 "history": [{"sku": "<sku>", "delta": <int>, "quantity": <int>, "revision": "<R>"}, ...],
//	 "orders": [{"sku": "<sku>", "quantity": <int>, "revision": "<R>", "signature": "<hex>"}, ...]}
//
// The data dir is $INVENTORY_DATA_DIR, or ./data relative to the working
// directory; both are created on the first write. Every write replaces the
// file atomically (temp file in the same dir, fsync, rename).
//
// The tools are defined in tools.go. Every result names the code revision that
// produced it ("revision=A"), so a caller can tell which build answered. Set a
// new one at build time with
//
//	go build -ldflags "-X main.revision=B" -o bin/inventory-server .
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// revision names the build; it is reported in every tool result and as the
// server's Implementation version. Overridden with -ldflags -X main.revision=….
var revision = "A"

func main() {
	log.SetFlags(0)
	log.SetPrefix("inventory-server: ")
	dir := os.Getenv("INVENTORY_DATA_DIR")
	if dir == "" {
		dir = "data"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st := &store{file: filepath.Join(dir, "inventory.json")}
	server := mcp.NewServer(&mcp.Implementation{Name: "inventory-go", Version: revision}, nil)
	addTools(server, st)

	log.Printf("revision=%s pid=%d data=%s", revision, os.Getpid(), st.file)
	if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// text returns a tool result holding one text block.
func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
