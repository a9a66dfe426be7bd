package host_test

import (
	"strings"
	"testing"
)

// A file put back to the last build's content, after a restart ran the
// server from other content: record says the content is the last build's,
// and does not blame the caches.
func TestRecordPutBack(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.record()
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")
	p.server("# edited\n", nil)
	p.restart()
	p.server("", nil)
	out := p.cli("record", "--dir", p.dir)
	if strings.Contains(out.Stdout+out.Stderr, "--rehash") || !strings.Contains(out.Stdout+out.Stderr, "the last build's") {
		t.Errorf("record after server.sh was put back:\n%s", out)
	}
}
