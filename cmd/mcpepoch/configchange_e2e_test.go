package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestHostSaysConfigChanged: a running host whose mcpepoch.toml changed
// says so on the next build signal, in its log, and in status: the file is
// not re-read while the client stays connected, the client must reconnect.
func TestHostSaysConfigChanged(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	h := startRawHost(t, p, "node", "dist/server.js")
	h.handshake()
	const note = "mcpepoch.toml changed since this host started; it is not re-read while the client stays connected: reconnect the client (restart its MCP server) to apply it"
	if out, _ := p.mcpepoch("status"); strings.Contains(out.Stdout, "config:") {
		t.Fatalf("status says the config changed before it did:\n%s", out)
	}
	f, err := os.OpenFile(p.path("mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[credentials.staging]\ntools = [\"inventory_adjust\"]\n")
	f.Close()
	p.record()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.stderr.String(), note) {
		if time.Now().After(deadline) {
			t.Fatalf("host log does not say the config changed:\n%s", h.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, code := p.mcpepoch("status")
	if code != 0 || !strings.Contains(out.Stdout, "  config:   "+note+"\n") {
		t.Errorf("status: exit %d, does not say the config changed:\n%s", code, out)
	}
	out, _ = testenv.Run(t, p.dir, nil, p.bin, "status", "--json")
	if !strings.Contains(out.Stdout, `"configChanged": "`+note+`"`) {
		t.Errorf("status --json has no configChanged:\n%s", out)
	}
}
