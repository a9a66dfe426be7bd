package main

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestSignalOutcomeBusyHost: a host whose socket answered busy did not get
// the build signal; record says so plainly, and that the host sees the new
// manifest by itself, rather than a bare protocol error.
func TestSignalOutcomeBusyHost(t *testing.T) {
	t.Parallel()
	err := &notify.RemoteError{Code: notify.CodeBusy, Message: "the host already serves 32 connections, the most it serves at once; try again"}
	o, lines := cli.SignalOutcome(cli.Painter{}, notify.Result{Socket: "s", Err: err})
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "host busy:") || !strings.Contains(lines[0], "the build signal did not reach it") ||
		!strings.Contains(lines[0], "sees the new manifest by itself") {
		t.Fatalf("lines %q, want one plain busy line", lines)
	}
	if o.Result != localapi.OutcomeOf(notify.Response{}, err) {
		t.Errorf("outcome %q", o.Result)
	}
}
