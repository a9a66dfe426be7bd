package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// raced returns the server_replaced records whose reason says the
// identity changed while a launch started.
func raced(records []audit.Record) []audit.Record {
	var out []audit.Record
	for _, r := range records {
		if reason, _ := r.Fields["reason"].(string); r.Type == audit.TypeServerReplaced && strings.HasPrefix(reason, "identity changed while the server started") {
			out = append(out, r)
		}
	}
	return out
}

// The server renames new code over its own entry while it starts, after
// the host computed the launch's identity: mcpepoch restart must not leave
// that epoch running under an identity that names the old bytes. The host
// sees the change once the server is up, does not use the epoch and starts
// again under a new one, whose identity is the code that runs.
func TestLaunchCheckCodeSwappedWhileStarting(t *testing.T) {
	p := newProject(t, nil)
	p.server("if [ -f next.sh ]; then mv next.sh server.sh; fi\n", map[string]string{"REV": "A"})
	c := startRaw(t, p, nil)
	c.initialize()
	before := p.status()
	p.write("next.sh", "#!/bin/sh\nexport REV='B'\nexec ./bin/fixture\n")

	p.restart()
	after := p.waitState(host.StateReady, waitLong)
	if after.Execution.EntryDigest == before.Execution.EntryDigest {
		t.Errorf("running entry digest %s after the restart, the digest of the bytes the server replaced", after.Execution.EntryDigest)
	}
	rs := raced(p.records())
	if len(rs) != 1 {
		t.Fatalf("%d server_replaced records for a launch whose code changed while it started, want 1:\n%s", len(rs), c.stderr.String())
	}
	if rs[0].Epoch != string(after.Execution.Epoch) || rs[0].Fields[audit.FieldPrevEpoch] == string(before.Execution.Epoch) {
		t.Errorf("the replacement %s → %s; want the restart's epoch replaced by the running one %s", rs[0].Fields[audit.FieldPrevEpoch], rs[0].Epoch, after.Execution.Epoch)
	}
	if !strings.Contains(c.stderr.String(), "changed while pid") {
		t.Errorf("the host's log does not say the epoch was not used:\n%s", c.stderr.String())
	}
}

// deliver = "env": the relaunch that carries the approved variable swaps
// new code in while it starts. The epoch the person approved is not kept:
// its grant is revoked, the server starts again under a new epoch without
// the variable, and the call needs a new approval.
func TestLaunchCheckEnvRelaunchSwapped(t *testing.T) {
	p := newEnvProject(t)
	p.revision("B")
	next := p.read("server.sh")
	p.revision("A")
	p.write("server.sh", strings.Replace(p.read("server.sh"), "#!/bin/sh\n",
		"#!/bin/sh\nif [ -n \"${API_TOKEN+set}\" ] && [ -f next.sh ]; then mv next.sh server.sh; fi\n", 1))
	p.write("next.sh", next)
	s := gConnect(t, p.project)
	p.launches(1)
	before := p.status()

	p.cli("approve", "--yes", "--all")
	got := p.launches(3)
	want := []string{"rev=A api=none", "rev=A api=" + hashed(envSecret), "rev=B api=none"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("launches %q, want %q", got, want)
	}
	after := p.waitState(host.StateReady, waitLong)
	if after.Execution.Epoch == before.Execution.Epoch {
		t.Errorf("epoch %s still runs after its code changed in the relaunch", after.Execution.Epoch)
	}
	if len(raced(p.records())) != 1 {
		t.Errorf("no server_replaced record for the relaunch whose code changed:\n%s", s.stderr)
	}
	s.rpcError("plain", nil, host.CodeAuthorizationStale, "authorization_stale:")
}
