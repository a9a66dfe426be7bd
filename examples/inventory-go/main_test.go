package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// build compiles this package into dir/inventory-server with extra go build
// arguments and returns the binary's path.
func build(t *testing.T, dir string, args ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool: %v", err)
	}
	bin := filepath.Join(dir, "inventory-server")
	cmd := exec.Command(goTool, append(append([]string{"build", "-o", bin}, args...), ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, out)
	}
	return bin
}

// connect starts bin as a stdio MCP server on dataDir and connects a go-sdk
// client to it.
func connect(t *testing.T, ctx context.Context, bin, dataDir string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "INVENTORY_DATA_DIR="+dataDir)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "inventory-test", Version: "0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

func toolNames(t *testing.T, ctx context.Context, session *mcp.ClientSession) []string {
	t.Helper()
	res, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool and returns its text, failing the test on a protocol
// error or when the tool's error flag differs from wantErr.
func call(t *testing.T, ctx context.Context, session *mcp.ClientSession, name string, args map[string]any, wantErr bool) string {
	t.Helper()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s %v: %v", name, args, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("tools/call %s %v: isError=%v, want %v; text %q", name, args, res.IsError, wantErr, text.String())
	}
	return text.String()
}

func readInventory(t *testing.T, file string) inventory {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var inv inventory
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return inv
}

func TestServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	binDir, dataDir := t.TempDir(), t.TempDir()
	dataFile := filepath.Join(dataDir, "inventory.json")

	session := connect(t, ctx, build(t, binDir), dataDir)
	if got, want := toolNames(t, ctx, session), []string{"inventory_adjust", "inventory_lookup", "inventory_order"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if got, want := session.InitializeResult().ServerInfo.Version, "A"; got != want {
		t.Errorf("server version = %q, want %q", got, want)
	}

	if got, want := call(t, ctx, session, "inventory_lookup", map[string]any{"sku": "widget"}, false), "sku=widget quantity=0 revision=A"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
	if _, err := os.Stat(dataFile); err == nil {
		t.Errorf("lookup created %s", dataFile)
	}
	if got, want := call(t, ctx, session, "inventory_adjust", map[string]any{"sku": "widget", "delta": 5}, false), "sku=widget quantity=5 revision=A"; got != want {
		t.Errorf("adjust +5 = %q, want %q", got, want)
	}
	if got := call(t, ctx, session, "inventory_adjust", map[string]any{"sku": "widget", "delta": -7}, true); !strings.Contains(got, "insufficient stock") {
		t.Errorf("adjust -7 = %q, want insufficient stock", got)
	}
	call(t, ctx, session, "inventory_adjust", map[string]any{"sku": "widget"}, true) // delta is required
	// Outside mcpepoch host there is no supplier token: a tool error that
	// says so, and nothing written.
	if got := call(t, ctx, session, "inventory_order", map[string]any{"sku": "widget", "quantity": 3}, true); !strings.Contains(got, "credential inventory-supplier: not_under_host: not running under mcpepoch host") {
		t.Errorf("order without a host = %q", got)
	}

	inv := readInventory(t, dataFile)
	if got := inv.Stock["widget"]; got != 5 || len(inv.Stock) != 1 {
		t.Errorf("stock = %v, want widget=5 only", inv.Stock)
	}
	if want := []adjustment{{SKU: "widget", Delta: 5, Quantity: 5, Revision: "A"}}; !slices.Equal(inv.History, want) {
		t.Errorf("history = %v, want %v", inv.History, want)
	}
	if len(inv.Orders) != 0 {
		t.Errorf("orders = %v, want none", inv.Orders)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dataDir, "*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
	if err := session.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	// Rebuild with testdata/history.go laid over the package and a new
	// revision: the new tool appears and reads what revision A wrote.
	historyGo, err := filepath.Abs("testdata/history.go")
	if err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs("history.go")
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{target: historyGo}})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := build(t, binDir, "-overlay", overlayFile, "-ldflags", "-X main.revision=B")

	session = connect(t, ctx, bin, dataDir)
	if got, want := toolNames(t, ctx, session), []string{"inventory_adjust", "inventory_history", "inventory_lookup", "inventory_order"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if got, want := call(t, ctx, session, "inventory_lookup", map[string]any{"sku": "widget"}, false), "sku=widget quantity=5 revision=B"; got != want {
		t.Errorf("lookup = %q, want %q", got, want)
	}
	call(t, ctx, session, "inventory_adjust", map[string]any{"sku": "widget", "delta": -2}, false)
	want := "sku=widget revision=B\ndelta=+5 quantity=5 revision=A\ndelta=-2 quantity=3 revision=B\n"
	if got := call(t, ctx, session, "inventory_history", map[string]any{"sku": "widget"}, false); got != want {
		t.Errorf("history = %q, want %q", got, want)
	}
}

// TestForeignDataFile checks that a data file of another shape is reported,
// not replaced.
func TestForeignDataFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	dataFile := filepath.Join(dataDir, "inventory.json")
	foreign := []byte(`{"widget": 3}` + "\n")
	if err := os.WriteFile(dataFile, foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	session := connect(t, ctx, build(t, t.TempDir()), dataDir)
	if got := call(t, ctx, session, "inventory_adjust", map[string]any{"sku": "widget", "delta": 1}, true); !strings.Contains(got, dataFile) {
		t.Errorf("adjust on foreign file = %q, want an error naming %s", got, dataFile)
	}
	if got, _ := os.ReadFile(dataFile); string(got) != string(foreign) {
		t.Errorf("data file changed to %q", got)
	}
}
