package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// serverGo is a go-sdk MCP server with one tool per name in tools, each
// answering with revision.
const serverGo = `package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const revision = "A"

var tools = []string{"weather_now"}

type none struct{}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	for _, name := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "weather " + name}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "revision=" + revision}}}, nil, nil
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
`

// From a fresh Go project (go.mod, the go-sdk, a package main): init
// --yes, dev, doctor clean, a real client through the config init wrote,
// and a save reaching it as a new tool and revision. Modules come from the
// local module cache only (GOPROXY=off, GOSUMDB=off).
func TestDevLoopFreshGo(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	bin := testenv.Mcpepoch(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "go is not on PATH")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{filepath.Dir(bin), filepath.Dir(task), filepath.Dir(goBin), os.Getenv("PATH")}, string(os.PathListSeparator))
	// The module's dependencies come from the local module cache only
	// (GOPROXY=off), which cmd/go verified when it downloaded them for this
	// repository: the module requires what this repository requires (so
	// go-sdk and its dependencies resolve to the versions in its go.sum),
	// and is not tidied (tidy wants the modules that go-sdk's own tests
	// import, which building this repository never downloads).
	env := []string{"PATH=" + path, "NO_COLOR=1", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off"}
	root := testenv.RepoRoot(t)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	_, requires, ok := strings.Cut(string(mod), "\nrequire")
	if !ok {
		t.Fatalf("%s/go.mod has no require", root)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/weather\n\ngo 1.26\n\nrequire"+requires)
	writeFile(t, filepath.Join(dir, "go.sum"), string(sum))
	writeFile(t, filepath.Join(dir, "main.go"), serverGo)
	if out, code := testenv.Run(t, dir, env, goBin, "build", "-o", os.DevNull, "."); code != 0 {
		t.Fatalf("go build: exit %d\n%s", code, out)
	}
	out, code := testenv.Run(t, dir, env, bin, "init", "--yes")
	if code != 0 || !strings.Contains(out.Combined, "go build -o bin/weather .") {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	f, err := os.OpenFile(filepath.Join(dir, "mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[grants]\nexempt = [\"weather_*\"]\n")
	f.Close()
	dev := startDev(t, dir, env, bin)
	dev.waitFor(t, "build complete")
	if out, code := testenv.Run(t, dir, env, bin, "doctor"); code != 0 {
		t.Errorf("doctor after init and the first build: exit %d\n%s", code, out)
	}
	c := testenv.Driver(t, dir, env, configured(t, dir)...)
	if names := tools(t, c); strings.Join(names, ",") != "weather_now" {
		t.Fatalf("tools %q", names)
	}
	callText(t, c, "weather_now", "revision=A")
	src := strings.NewReplacer(`"A"`, `"B"`, `{"weather_now"}`, `{"weather_now", "weather_alerts"}`).Replace(serverGo)
	writeFile(t, filepath.Join(dir, "main.go"), src)
	if _, err := c.WaitListChanged(1, 60*time.Second); err != nil {
		t.Fatalf("no list_changed after the save: %v\ndev:\n%s", err, dev.String())
	}
	if names := tools(t, c); strings.Join(names, ",") != "weather_alerts,weather_now" {
		t.Errorf("tools after the save %q", names)
	}
	callText(t, c, "weather_now", "revision=B")
	dev.interrupt(t)
}
