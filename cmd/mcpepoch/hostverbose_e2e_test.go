package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// host -v logs each message from the client and the server and each one
// to the client (kind, method, id, size) and never what a call carried.
func TestHostVerboseLogsEachMessage(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := testenv.Driver(t, p.dir, nil, p.bin, "host", "--verbose", "--", "node", "dist/server.js")
	const secret = "sku-7f3a-secret"
	if got := call(t, c, "inventory_lookup", map[string]any{"sku": secret}); !strings.Contains(got, secret) {
		t.Fatalf("lookup: %q", got)
	}
	log := c.Stderr()
	for _, re := range []string{
		`(?m)^mcpepoch host: \S+ from client: request initialize id \S+ \(\d+ bytes\)$`,
		`(?m)^mcpepoch host: \S+ from client: notification notifications/initialized \(\d+ bytes\)$`,
		`(?m)^mcpepoch host: \S+ from client: request tools/call id \S+ \(\d+ bytes\)$`,
		`(?m)^mcpepoch host: \S+ from server: result id \S+ \(\d+ bytes\)$`,
		`(?m)^mcpepoch host: \S+ to client: result id \S+ \(\d+ bytes\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(log) {
			t.Errorf("host -v log has no line matching %s:\n%s", re, log)
		}
	}
	if strings.Contains(log, secret) {
		t.Errorf("host -v logged what the call carried:\n%s", log)
	}
	if strings.Contains(log, "from client:") && !strings.Contains(log, "to client:") {
		t.Errorf("no message to the client logged:\n%s", log)
	}
}
