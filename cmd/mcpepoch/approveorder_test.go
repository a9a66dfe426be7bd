package main

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// With several hosts, approve shows first the hosts with calls waiting
// for an approval, and last a host that offers only a renewal (the oldest
// renewal last).
func TestApproveOrdersHostsByWhatWaits(t *testing.T) {
	t.Parallel()
	rv := func(run string, pending bool, renewal epoch.Epoch) localapi.Review {
		r := localapi.Review{AgentRun: epoch.RunID(run), Epoch: "E" + epoch.Epoch(run)}
		if pending {
			r.Pending = []*localapi.Pending{{Tool: "add", Epoch: r.Epoch}}
		}
		if renewal != "" {
			r.Renewal = &localapi.Renewal{Epoch: renewal, Tools: []string{"add"}}
		}
		return r
	}
	reviews := []localapi.Review{
		rv("old-renewal", false, "01A"), rv("idle", false, ""), rv("new-renewal", false, "01B"), rv("waiting", true, ""),
		rv("waiting-renewal", true, "01C"),
	}
	orderReviews(reviews)
	var got []string
	for _, r := range reviews {
		got = append(got, string(r.AgentRun))
	}
	want := []string{"waiting", "waiting-renewal", "idle", "new-renewal", "old-renewal"}
	if !slices.Equal(got, want) {
		t.Errorf("order: %v, want %v", got, want)
	}
}

// Enter at the renewal prompt is "no" for that host, and the prompt says
// so: it does not ask again.
func TestRenewalPromptEnterIsNo(t *testing.T) {
	t.Parallel()
	r := &localapi.Renewal{Epoch: "01B", Tools: []string{"add"}}
	if p := renewalKeys(r); !strings.Contains(p, "n or Enter: no") {
		t.Errorf("renewal prompt %q does not say Enter is no", p)
	}
	in := bufio.NewReader(strings.NewReader("\ny\n"))
	var out strings.Builder
	_, answer, err := askRenewal(newKeyReader(context.Background(), in, io.Reader(nil)), &out, r)
	if err != nil || answer != renewalDeclined {
		t.Errorf("Enter at the renewal prompt: answer %v, err %v, want declined\n%s", answer, err, out.String())
	}
	if strings.Count(out.String(), "review all") != 1 {
		t.Errorf("the prompt was asked more than once:\n%s", out.String())
	}
}

// A renewal with nothing to renew offers no key: approve says so and goes
// on to the review. A renewal shown beside calls waiting for other tools
// names them and the key that reviews them.
func TestRenewalEmptyAndWaitingOutside(t *testing.T) {
	t.Parallel()
	settle := func(rv localapi.Review, input string) string {
		var out, errw strings.Builder
		keys := newKeyReader(context.Background(), bufio.NewReader(strings.NewReader(input)), io.Reader(nil))
		req := &localapi.ApproveRequest{}
		settleRequest(keys, Stdio{Out: &out, Err: &errw}, rv, req, true, screen{p: newPainter(&out)})
		return out.String() + errw.String()
	}
	empty := localapi.Review{AgentRun: "R", Epoch: "E2", Renewal: &localapi.Renewal{Epoch: "E2", FromEpoch: "E1", Revoked: []epoch.GrantID{"G"}}}
	got := settle(empty, "\nn\n")
	if strings.Contains(got, "renewal -") || strings.Contains(got, "review all") || !strings.Contains(got, "whose 1 grant ended with it: nothing of it to renew") {
		t.Errorf("an empty renewal:\n%s", got)
	}
	waiting := localapi.Review{AgentRun: "R", Epoch: "E2", Pending: []*localapi.Pending{{Tool: "reverse", Epoch: "E2"}, {Tool: "shout", Epoch: "E2"}},
		Renewal: &localapi.Renewal{Epoch: "E2", FromEpoch: "E1", ShortCode: "AB12-CD34", Tools: []string{"shout"}}}
	got = settle(waiting, "n")
	if !strings.Contains(got, "waiting  reverse: calls held or refused, not in the renewal (r reviews them)") {
		t.Errorf("a renewal beside a call waiting for another tool:\n%s", got)
	}
}
