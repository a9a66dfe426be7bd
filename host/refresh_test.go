package host_test

import (
	"strings"
	"testing"
	"time"
)

// TestRestartPreemptsStalledRelist: a server that announces
// notifications/tools/list_changed and then never answers tools/list
// does not hold back its own replacement. The host's re-list would wait
// InitTimeout (30 s) for each notification; mcpepoch restart cuts it short.
func TestRestartPreemptsStalledRelist(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_STALL_LIST": "1"})
	c := startRaw(t, p, nil)
	c.initialize()
	c.listTools()
	for i := 0; i < 3; i++ {
		if r := c.callWait("stall_list", nil); r.Error != nil {
			t.Fatalf("stall_list: %v", r)
		}
	}
	// Each answer came after its notification: the host's re-list is
	// under way, and two more are folded into one.
	took := p.restart()
	if took > 10*time.Second {
		t.Errorf("mcpepoch restart took %s behind a re-list the server never answers (InitTimeout 30 s)", took.Round(time.Millisecond))
	}
	if !strings.Contains(c.stderr.String(), "preempted by a restart") {
		t.Errorf("host log does not say the re-list was preempted:\n%s", c.stderr.String())
	}
	if r := c.callWait("version", nil); r.Error != nil {
		t.Fatalf("version after the restart: %v", r)
	}
}
