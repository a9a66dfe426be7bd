package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/credentials"
)

// supplierScope is the credential scope inventory_order uses: the
// [credentials.inventory-supplier] table of the project's mcpepoch.toml.
const supplierScope = "inventory-supplier"

// orderInput is the input of inventory_order.
type orderInput struct {
	SKU      string `json:"sku" jsonschema:"stock keeping unit"`
	Quantity int    `json:"quantity" jsonschema:"how many to order, at least 1"`
}

// order records one inventory_order call: what a supplier would receive,
// signed with the supplier token. The token itself is never stored.
type order struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	Revision  string `json:"revision"`
	Signature string `json:"signature"` // orderSignature with the supplier token
}

// orderSignature is the hex HMAC-SHA256, keyed with the supplier token, of
// "SKU QUANTITY REVISION": it proves which token signed the order without
// holding it.
func orderSignature(token, sku string, quantity int, rev string) string {
	m := hmac.New(sha256.New, []byte(token))
	fmt.Fprintf(m, "%s %d %s", sku, quantity, rev)
	return hex.EncodeToString(m.Sum(nil))
}

// addOrderTool registers inventory_order: a write that needs a secret.
// It asks the host for the supplier token during the call
// (credentials.Get), signs the order with it, adds the quantity to the
// stock and records the signed order. Without the token (no host, no
// grant, a stale epoch) it is a tool error that writes nothing.
func addOrderTool(server *mcp.Server, st *store) {
	notOpenWorld, notDestructive := false, false
	mcp.AddTool(server, &mcp.Tool{
		Name:  "inventory_order",
		Title: "Order stock from the supplier",
		Description: "Order quantity of a SKU from the supplier, signed with the supplier token " +
			"(credential scope " + supplierScope + "), and add it to the stock.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &notDestructive, OpenWorldHint: &notOpenWorld},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in orderInput) (*mcp.CallToolResult, stockOutput, error) {
		if in.SKU == "" {
			return nil, stockOutput{}, errEmptySKU
		}
		if in.Quantity < 1 {
			return nil, stockOutput{}, fmt.Errorf("quantity %d: want at least 1", in.Quantity)
		}
		// The request's _meta names the call to the host, which hands
		// the token to a call a person approved for the scope only.
		token, err := credentials.Get(ctx, supplierScope, req.Params.Meta)
		if err != nil {
			return nil, stockOutput{}, err // names the scope and the host's reason, never a value
		}
		o := order{SKU: in.SKU, Quantity: in.Quantity, Revision: revision,
			Signature: orderSignature(token, in.SKU, in.Quantity, revision)}
		var quantity int
		err = st.update(func(inv *inventory) error {
			quantity = inv.Stock[in.SKU] + in.Quantity
			inv.Stock[in.SKU] = quantity
			inv.Orders = append(inv.Orders, o)
			return nil
		})
		if err != nil {
			return nil, stockOutput{}, err
		}
		return stock(in.SKU, quantity)
	})
}
