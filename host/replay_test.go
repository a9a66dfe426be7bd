package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayedInitializeKeepsNumbersExact: the client's initialize is
// replayed to every new server with its numbers as the client wrote them.
// Decoded into Go numbers, a 20-digit integer came out as a float with
// other digits, and 1e400 (beyond float64) made every restart fail and
// left the host down.
func TestReplayedInitializeKeepsNumbersExact(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	// tee keeps what the host sends each server, one line per message,
	// outside the project: a command line with a pipe makes the whole
	// project code, and a write into it would be a change of the code.
	log := filepath.Join(t.TempDir(), "stdin.log")
	c := startRaw(t, p, nil, "sh", "-c", "tee -a "+log+" | ./bin/fixture")
	r := c.roundTrip("initialize", json.RawMessage(`{"protocolVersion":"`+legacyVersion+`","capabilities":{},`+
		`"clientInfo":{"name":"numbers","version":"0"},"x-count":12345678901234567890,"x-huge":1e400}`))
	if r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	c.notify("notifications/initialized", nil)
	c.listTools()

	p.restart()
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("version after the restart: %v", r)
	}
	var replays []string
	for _, l := range lines(readFile(t, log)) {
		if strings.Contains(l, `"method":"initialize"`) && strings.Contains(l, `"mcpepoch:`) {
			replays = append(replays, l)
		}
	}
	if len(replays) != 1 {
		t.Fatalf("%d replayed initialize requests, want 1; the servers read:\n%s", len(replays), readFile(t, log))
	}
	for _, want := range []string{`"x-count":12345678901234567890`, `"x-huge":1e400`} {
		if !strings.Contains(replays[0], want) {
			t.Errorf("replayed initialize lacks %s:\n%s", want, replays[0])
		}
	}
}

// readFile returns the content of the file at path, or "" when it cannot
// be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}
