package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestRestartOneLinePerHost asks three stand-in hosts for a restart: each
// gets its own line, prefixed with its run id, and any host that did not
// restart makes the exit status 4.
func TestRestartOneLinePerHost(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	answer := func(resp notify.Response) notify.Handler {
		return func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
			if req.Type != localapi.TypeRestart {
				return notify.ErrorResponse(notify.CodeUnknownType, req.Type)
			}
			return resp
		}
	}
	ok := fakeHost(t, root, answer(notify.Response{Type: string(localapi.OutcomeRestarted),
		OldEpoch: "01J9Z6W0C2H6F0S8A1B3E5G7K9", NewEpoch: "01J9Z6Y3N4D5X8QK2M7R3T1V0A", OldPID: 1, NewPID: 2}))
	held := fakeHost(t, root, answer(notify.Response{Type: string(localapi.OutcomeHeld)}))
	failed := notify.ErrorResponse(localapi.CodeRestartFailed, "server down: no server")
	failed.Stderr = []string{"Error: gone\x1b[2J"} // the server's own words, escaped
	broken := fakeHost(t, root, answer(failed))

	stdout, stderr, code := runCLI(t, "restart", "--dir", root)
	if code != exitHostError {
		t.Errorf("exit %d, want %d", code, exitHostError)
	}
	// The restart is the result, on stdout; what failed is on stderr.
	if want := "[host " + ok + "] server restarted: epoch 01J9Z6W0C2H6F0S8A1B3E5G7K9 → 01J9Z6Y3N4D5X8QK2M7R3T1V0A, pid 1 → 2\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	for _, want := range []string{
		"[host " + held + `] unexpected answer "held"` + "\n",
		"[host " + broken + "] restart failed: server down: no server\n",
		"[host " + broken + "] the server's stderr ended with:\n",
		"[host " + broken + `]   Error: gone\x1b[2J` + "\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if n := strings.Count(stderr, "\n"); n != 4 {
		t.Errorf("stderr has %d lines, want 4:\n%s", n, stderr)
	}
}
