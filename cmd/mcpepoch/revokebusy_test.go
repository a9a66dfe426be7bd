package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
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

// TestRevokeRequestFileFirst: the host that holds the grant may act on the
// request file before the socket request reaches it, and then answer that
// it holds no such grant live. The grant's file, which the host wrote when
// it ended the grant, shows it revoked: revoke says it was, and exits 0,
// instead of calling the host gone.
func TestRevokeRequestFileFirst(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	const run, id = "01JQ1111111111111111111111", "01JQ2222222222222222222222"
	path := filepath.Join(root, ".mcpepoch", "grants", run+".json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	s, err := grant.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Add(&grant.Grant{ID: id, AgentRun: run, ExecutionEpoch: "01JQ3333333333333333333333", ToolScope: []string{"t"},
		IssuedAt: time.Now(), ExpiresWhen: grant.ExpiresRunEnds, ApprovedBy: "me"})
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	fakeHost(t, root, func(context.Context, notify.Peer, notify.Request) notify.Response {
		// What a host that read the request file first did: ended the
		// grant and wrote its file, under its lock, before this answer.
		s.Revoke(id, grant.RevokedByUser, time.Now())
		if err := s.Save(); err != nil {
			t.Error(err)
		}
		return notify.ErrorResponse(localapi.CodeNotFound, "no live grant "+id+" in agent run "+run)
	})
	stdout, stderr, code := runCLI(t, "revoke", "--dir", root, id[:12])
	if code != 0 || !strings.Contains(stdout, "revoked grant "+id) {
		t.Fatalf("revoke when the request file went first: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
