package hook_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// silentSocket binds a socket in the project's socket directory that
// accepts and never answers: a stopped host, or a same-user process that
// is no host. It returns the socket's path.
func silentSocket(t *testing.T, root string) string {
	t.Helper()
	dir, err := notify.MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, string(epoch.NewRunID(time.Now()))+notify.SocketSuffix)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return path
}

// TestRecordDoesNotWaitForSilentSocket: a socket that never answers, next
// to a real host, is reported as not answering, by its path, instead of
// holding the build for the whole Timeout; the real host gets its signal.
// With --rehash (no trees request) the build signal's acknowledgement is
// what it fails to send.
func TestRecordDoesNotWaitForSilentSocket(t *testing.T) {
	for _, rehash := range []bool{false, true} {
		s := project(t)
		s.Timeout = 30 * time.Second
		s.Identity.Rehash = rehash
		silent := silentSocket(t, s.Root)
		reqs := fakeHost(t, s.Root, notify.Response{Type: string(localapi.OutcomeRestarted), OldEpoch: "A", NewEpoch: "B"})
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		res, err := hook.Record(ctx, s)
		ended := ctx.Err()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var restarted, notAnswering bool
		for _, h := range res.Hosts {
			na, ok := errors.AsType[*notify.NotAnsweringError](h.Err)
			switch {
			case h.Socket == silent:
				notAnswering = ok && na.Socket == silent && h.Outcome == localapi.OutcomeError
			default:
				restarted = h.Err == nil && h.Outcome == localapi.OutcomeRestarted
			}
		}
		if !restarted || !notAnswering || ended != nil {
			t.Fatalf("rehash %v: hosts %+v (deadline reached: %v); want the host restarted and the silent socket not answering", rehash, res.Hosts, ended)
		}
		if sig := signals(*reqs); len(sig) != 1 || !sig[0].Ack {
			t.Errorf("rehash %v: the host got %+v, want one build signal asking for an acknowledgement", rehash, sig)
		}
	}
}
