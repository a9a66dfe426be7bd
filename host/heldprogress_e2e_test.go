package host_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestHeldCallProgressKeepsClient: a call held for an approval gets
// notifications/progress for its progressToken, so that a TypeScript SDK
// client whose timeout restarts on progress (resetTimeoutOnProgress) keeps
// it past that timeout until the person approves; each says what the call
// waits for and the command that approves, with progress growing toward
// grants.approval_wait. The same client without a progressToken gives up
// at its timeout.
func TestHeldCallProgressKeepsClient(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), "proof = [\"same-user\"]", "proof = [\"same-user\"]\napproval_wait = \"16s\"", 1))
	c, run := tsElicitClient(t, p, nil, "url")
	const timeout = 3 * time.Second // progress comes every 2 s (16 s / 8)

	_, err := c.CallWith("slow_write", map[string]any{"key": "n"}, testenv.CallOptions{Timeout: timeout}).Wait()
	if err == nil || err.Code == nil || *err.Code != -32001 {
		t.Fatalf("held call without a progressToken: %v, want the client's own timeout (-32001)", err)
	}

	pend := c.CallWith("slow_write", map[string]any{"key": "p"}, testenv.CallOptions{Timeout: timeout, Progress: true, ResetTimeoutOnProgress: true})
	nextElicitation(t, c, 2)
	time.Sleep(timeout + timeout/2)
	approveYes(t, p, run)
	res, err := pend.Wait()
	if err != nil || !strings.Contains(res.Text(), "count=") {
		t.Fatalf("held call with a progressToken: %v %v, want the server's answer after the approval", res, err)
	}
	prog := pend.Progress()
	if len(prog) < 2 {
		t.Fatalf("%d progress notifications over %s, want one at the ask and more", len(prog), timeout+timeout/2)
	}
	for i, pr := range prog {
		if pr.Total == nil || *pr.Total != 16 || (i > 0 && pr.Progress <= prog[i-1].Progress) ||
			!strings.Contains(pr.Message, "waits for a person's approval") || !strings.Contains(pr.Message, "slow_write") ||
			!strings.Contains(pr.Message, "mcpepoch approve") {
			t.Fatalf("progress %d: %+v (all: %+v)", i, pr, prog)
		}
	}
	if c, _ := p.counts("n"); c != "" {
		t.Errorf("the call the client gave up on reached the server: %q", c)
	}
}
