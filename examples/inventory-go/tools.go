package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// extraTools holds registrations added by files compiled in on top of this
// package, for example with go build -overlay (see testdata/history.go). Such
// a file appends to it from an init function; addTools runs them after the
// built-in tools. Nothing else modifies it.
var extraTools []func(*mcp.Server, *store)

// skuInput is the input of inventory_lookup.
type skuInput struct {
	SKU string `json:"sku" jsonschema:"stock keeping unit"`
}

// adjustInput is the input of inventory_adjust.
type adjustInput struct {
	SKU   string `json:"sku" jsonschema:"stock keeping unit"`
	Delta int    `json:"delta" jsonschema:"change in quantity, may be negative"`
}

// stockOutput is the structured result of both built-in tools.
type stockOutput struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	Revision string `json:"revision"`
}

// errEmptySKU is returned for an input whose sku is "".
var errEmptySKU = errors.New("sku must not be empty")

// addTools registers inventory_lookup, inventory_adjust, inventory_order
// (order.go) and every entry of extraTools on server.
func addTools(server *mcp.Server, st *store) {
	notOpenWorld, notDestructive := false, false

	mcp.AddTool(server, &mcp.Tool{
		Name:        "inventory_lookup",
		Title:       "Look up stock",
		Description: "Return the quantity in stock for a SKU (0 if the SKU is unknown).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in skuInput) (*mcp.CallToolResult, stockOutput, error) {
		if in.SKU == "" {
			return nil, stockOutput{}, errEmptySKU
		}
		st.mu.Lock()
		inv, err := st.load()
		st.mu.Unlock()
		if err != nil {
			return nil, stockOutput{}, err
		}
		return stock(in.SKU, inv.Stock[in.SKU])
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:  "inventory_adjust",
		Title: "Adjust stock",
		Description: "Add delta (may be negative) to the quantity in stock for a SKU and return the new quantity. " +
			"Fails without writing if the quantity would drop below zero.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &notDestructive, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in adjustInput) (*mcp.CallToolResult, stockOutput, error) {
		if in.SKU == "" {
			return nil, stockOutput{}, errEmptySKU
		}
		var quantity int
		err := st.update(func(inv *inventory) error {
			quantity = inv.Stock[in.SKU] + in.Delta
			if quantity < 0 {
				return fmt.Errorf("sku=%s quantity=%d revision=%s: insufficient stock for delta %d",
					in.SKU, inv.Stock[in.SKU], revision, in.Delta)
			}
			inv.Stock[in.SKU] = quantity
			inv.History = append(inv.History, adjustment{SKU: in.SKU, Delta: in.Delta, Quantity: quantity, Revision: revision})
			return nil
		})
		if err != nil {
			return nil, stockOutput{}, err
		}
		return stock(in.SKU, quantity)
	})

	addOrderTool(server, st)

	for _, add := range extraTools {
		add(server, st)
	}
}

// stock is the result of both built-in tools.
func stock(sku string, quantity int) (*mcp.CallToolResult, stockOutput, error) {
	return text("sku=%s quantity=%d revision=%s", sku, quantity, revision),
		stockOutput{SKU: sku, Quantity: quantity, Revision: revision}, nil
}
