// This file is not part of the package as checked in. Build it in with
//
//	go build -overlay testdata/overlay.json -o bin/inventory-server .
//
// to add the inventory_history tool, as a stand-in for a code change made
// while a client is connected.

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	extraTools = append(extraTools, addHistory)
}

// addHistory registers inventory_history, which lists the recorded
// adjustments of a SKU, oldest first.
func addHistory(server *mcp.Server, st *store) {
	notOpenWorld := false
	mcp.AddTool(server, &mcp.Tool{
		Name:        "inventory_history",
		Title:       "Stock history",
		Description: "List the recorded adjustments of a SKU, oldest first, with the revision that made each one.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in skuInput) (*mcp.CallToolResult, any, error) {
		if in.SKU == "" {
			return nil, nil, errEmptySKU
		}
		st.mu.Lock()
		inv, err := st.load()
		st.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "sku=%s revision=%s\n", in.SKU, revision)
		for _, a := range inv.History {
			if a.SKU == in.SKU {
				fmt.Fprintf(&b, "delta=%+d quantity=%d revision=%s\n", a.Delta, a.Quantity, a.Revision)
			}
		}
		return text("%s", b.String()), nil, nil
	})
}
