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
