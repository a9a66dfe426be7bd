package host_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
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

// TestRevokeWithEverySlotDribbled: a program of the user holds every one
// of the host's socket slots, and its overflow lane, with connections
// that send half a request line and wait, each renewed as soon as the
// host drops it (more of them than the host serves, so that a slot freed
// is taken at once). mcpepoch revoke still ends the grant, through its
// request file, and the next call under the grant is refused.
func TestRevokeWithEverySlotDribbled(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	if _, err := s.call("slow_write", map[string]any{"key": "before"}); err != nil {
		t.Fatalf("call under the grant: %v", err)
	}

	dir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, s.run+notify.SocketSuffix)
	ctx, stop := context.WithCancel(context.Background())
	wait := testenv.HoldSlots(ctx, sock, 3*notify.MaxConns)
	t.Cleanup(func() { stop(); wait() })
	time.Sleep(500 * time.Millisecond) // every slot and the overflow lane taken

	out, code := p.runCLI(nil, "revoke", gid)
	if code != 0 || !strings.Contains(out.Stdout, "revoked grant "+gid) {
		t.Fatalf("revoke with every slot dribbled: exit %d\n%s", code, out)
	}
	stop()
	wait()
	s.rpcError("slow_write", map[string]any{"key": "after"}, host.CodeAuthorizationRequired, "authorization_required:")
	if g := p.grant(gid); g.RevokedReason != grant.RevokedByUser {
		t.Fatalf("grant %s after revoke: reason %q, want %q", gid, g.RevokedReason, grant.RevokedByUser)
	}
	recs := p.auditRecords(audit.TypeGrantRevoked)
	if len(recs) != 1 || recs[0].Fields["via"] != "request_file" {
		t.Errorf("grant_revoked records: %+v, want one via the request file", recs)
	}
}

// TestRevokeRequestFileChecked: a revoke request file is read like any
// input: one that does not hold a request for the grant it is named after
// is refused once, audited with the file and the field, and the grant
// stays; a well-formed one ends the grant and is removed.
func TestRevokeRequestFileChecked(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	gid, _, _ := p.approve(s.run, "--tools", "slow_write", "--credential", gStaging)
	path := layout.RevokeRequest(p.dir, epoch.GrantID(gid))
	if err := layout.MkdirAll(layout.Revokes(p.dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"v": 1, "grant": "01J00000000000000000000000"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitRecords("a revoke_refused record", func(rs []audit.Record) bool {
		return len(filterType(rs, audit.TypeRevokeRefused)) > 0
	})
	time.Sleep(600 * time.Millisecond) // two more looks: said once
	recs := filterType(p.records(), audit.TypeRevokeRefused)
	if len(recs) != 1 || recs[0].Fields["file"] != path || !strings.Contains(fmt.Sprint(recs[0].Fields["error"]), "field grant") {
		t.Fatalf("revoke_refused records: %+v, want one naming the file and the field", recs)
	}
	if _, err := s.call("slow_write", map[string]any{"key": "k"}); err != nil {
		t.Fatalf("call under the grant after a malformed request: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the refused request was not left in place: %v", err)
	}

	if err := os.WriteFile(path, []byte(`{"v": 1, "grant": "`+gid+`", "requestedAt": "2030-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "the grant to end", func() bool { return p.grant(gid).RevokedReason == grant.RevokedByUser })
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the request acted on was not removed: %v", err)
	}
}
