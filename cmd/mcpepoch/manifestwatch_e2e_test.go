package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// A record that cannot reach any socket (here the host's socket is moved
// out of reach, as an agent's sandbox that blocks unix sockets would
// have it) still restarts the server: the host sees the new build id in
// the manifest. record says which way the build went.
func TestManifestIsABuildSignal(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.record()
	c := p.host()
	if got := tools(t, c); strings.Contains(strings.Join(got, ","), "inventory_ping") {
		t.Fatalf("tools before the build %q", got)
	}
	socks, err := filepath.Glob(filepath.Join(layout.Sock(p.dir), "*.sock"))
	if err != nil || len(socks) != 1 {
		t.Fatalf("sockets %q: %v", socks, err)
	}
	away := filepath.Join(t.TempDir(), "away.sock")
	if err := os.Rename(socks[0], away); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(away, socks[0]) // for the host's own cleanup

	p.addPingTool()
	p.build()
	stderr := p.record()
	wantLine(t, stderr, "no host reachable over the socket; hosts watching the manifest will see this build")
	if _, err := c.WaitListChanged(1, 10*time.Second); err != nil {
		t.Fatalf("no list_changed after a build only the manifest told of: %v\nhost:\n%s", err, c.Stderr())
	}
	if got := tools(t, c); !strings.Contains(strings.Join(got, ","), "inventory_ping") {
		t.Errorf("tools after the build %q", got)
	}
	if !strings.Contains(c.Stderr(), "(seen in the manifest)") {
		t.Errorf("the host did not say the manifest brought the build:\n%s", c.Stderr())
	}
}

// With the socket reachable, the build comes both ways and restarts the
// server once: record reports the restart the manifest watch may have
// started first, not "unchanged".
func TestSocketAndManifestOneRestart(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.record()
	c := p.host()
	tools(t, c)
	p.addPingTool()
	p.build()
	stderr := p.record()
	wantLine(t, stderr, "signalled 1 host over the socket")
	if !restartRE.MatchString(stderr) {
		t.Errorf("record did not report the restart:\n%s", stderr)
	}
	if _, err := c.WaitListChanged(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // time for a second restart, if there were one
	if n := c.Events().ListChanged; n != 1 {
		t.Errorf("%d list_changed for one build, want 1\nhost:\n%s", n, c.Stderr())
	}
}
