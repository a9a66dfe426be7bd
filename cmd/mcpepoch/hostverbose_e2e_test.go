package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

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

// host -q leaves the routine lines out of its log (the server started,
// the socket, the catalog) and keeps the epoch change a rebuild brings.
func TestHostQuietKeepsEpochChanges(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	c := testenv.Driver(t, p.dir, nil, p.bin, "host", "-q", "--", "node", "dist/server.js")
	call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"})
	p.record()
	p.setRevision("B")
	p.build()
	p.record()
	if _, err := c.WaitListChanged(1, 30*time.Second); err != nil {
		t.Fatalf("no list_changed after the rebuild: %v", err)
	}
	log := c.Stderr()
	for _, routine := range []string{"started pid", "listening on", ": catalog "} {
		if strings.Contains(log, routine) {
			t.Errorf("host -q logged a routine line (%q):\n%s", routine, log)
		}
	}
	if !strings.Contains(log, "changed: stopping pid") {
		t.Errorf("host -q left out the epoch change:\n%s", log)
	}
}
