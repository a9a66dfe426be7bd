package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/notify"
)

// TestRevokeBusyHost: a host that answers busy (as one serving
// notify.MaxConns connections does) may hold the grant, so revoke waits
// for the host to act on its request file; this one never does, so
// revoke says the grant was not confirmed revoked, names the host and the
// request file it leaves, instead of claiming no host holds it, and the
// one sure way to end it now: closing the client, which ends the host.
func TestRevokeBusyHost(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	fakeHost(t, root, func(context.Context, notify.Peer, notify.Request) notify.Response {
		return notify.ErrorResponse(notify.CodeBusy, "the host already serves 16 connections, the most it serves at once; try again")
	})
	_, stderr, code := runCLI(t, "revoke", "--dir", root, "01JQ0000000000000000000000")
	if code == 0 || strings.Contains(stderr, "no live host") || !strings.Contains(stderr, "not confirmed revoked") ||
		!strings.Contains(stderr, filepath.Join(".mcpepoch", "revoke", "01JQ0000000000000000000000")) || !strings.Contains(stderr, "busy") && !strings.Contains(stderr, "16 connections") ||
		!strings.Contains(stderr, "close the MCP client that runs the host") {
		t.Fatalf("revoke with a busy host: exit %d\n%s\nwant the grant not revoked, the busy host named, and the sure way to end it", code, stderr)
	}
}
