package host_test

import (
	"bufio"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestRevokeWithEverySlotHeld: a program of the user holds all of the
// host's notify.MaxConns socket slots with valid requests, answered and
// kept open; a person's mcpepoch revoke and status still get through, and
// the grant ends.
func TestRevokeWithEverySlotHeld(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)

	dir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, s.run+notify.SocketSuffix)
	for i := range notify.MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte(`{"v":1,"type":"status"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, `"status"`) {
			t.Fatalf("holding connection %d: %q, %v", i, line, err)
		}
	}

	if out, code := p.runCLI(nil, "status"); code != 0 {
		t.Errorf("status with every slot held: exit %d\n%s", code, out)
	}
	if out, code := p.runCLI(nil, "revoke", gid); code != 0 {
		t.Fatalf("revoke with every slot held: exit %d\n%s", code, out)
	}
	if g := p.grant(gid); g.RevokedReason != grant.RevokedByUser {
		t.Fatalf("grant %s after revoke: reason %q, want %q", gid, g.RevokedReason, grant.RevokedByUser)
	}
}
