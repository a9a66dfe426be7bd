package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// BenchmarkRenewalDecisionToLive measures the renewal's path from a
// person's decision to the grant live in a real host: the approval a key
// press sends (mcpepoch approve, dev) over the host's socket until the host
// answers with the grant, which it holds live before it answers. Each
// iteration first (untimed) rebuilds the server under a new epoch, which
// ends the grant and prepares the renewal. decision-ms is the median,
// decision-p90-ms the 90th percentile; the call that then passes under
// the grant is call-ms.
func BenchmarkRenewalDecisionToLive(b *testing.B) {
	p := newProject(b, nil)
	toml, err := os.ReadFile(filepath.Join("testdata", "grants", "mcpepoch.toml"))
	if err != nil {
		b.Fatal(err)
	}
	p.write("mcpepoch.toml", string(toml))
	p.serverWithCounter(nil)
	cs := connectGo(b, p.command(mcpepoch(b), p.hostArgs(nil)...), &testenv.Buffer{}, nil, "")
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		b.Fatal(err)
	}
	var run string
	waitFor(b, waitLong, "the host", func() bool {
		if hs := p.hosts(); len(hs) == 1 && hs[0].State == "ready" && hs[0].Catalog != "" {
			run = string(hs[0].AgentRun)
			return true
		}
		return false
	})
	p.approve(run, "--tools", "slow_write", "--credential", gStaging)
	params := &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{"key": "bench"}}
	var decided, called []time.Duration
	for b.Loop() {
		b.StopTimer()
		p.cli("restart")
		var r *localapi.Renewal
		waitFor(b, waitLong, "the renewal", func() bool { r = p.review(run).Renewal; return r != nil })
		req := r.Request(nil, localapi.ChannelScript)
		b.StartTimer()
		t0 := time.Now()
		resp, err := p.sendHost(run, localapi.TypeApprove, req)
		if err != nil {
			b.Fatal(err)
		}
		decided = append(decided, time.Since(t0))
		b.StopTimer()
		if g, _ := localapi.DecodePayload[grant.Grant](resp.Payload); g.ExecutionEpoch != r.Epoch || !slices.Equal(g.ToolScope, []string{"slow_write"}) {
			b.Fatalf("grant %+v, want slow_write on %s", g, r.Epoch)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatalf("slow_write under the renewed grant: %v %+v", err, res)
		}
		called = append(called, time.Since(t1))
		b.StartTimer()
	}
	reportMS(b, "decision", decided)
	reportMS(b, "call", called)
}

// reportMS reports the median and 90th percentile of s in ms.
func reportMS(b *testing.B, prefix string, s []time.Duration) {
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[len(s)/2]), prefix+"-ms")
	b.ReportMetric(ms(s[(len(s)*9+9)/10-1]), prefix+"-p90-ms")
}
