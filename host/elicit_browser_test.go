package host_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// tsElicitClient starts the TypeScript SDK driver declaring elicitation
// mode (url or form) with the project's host as its server, lists the
// tools and returns the client and the host's agent run.
func tsElicitClient(t *testing.T, p *project, env []string, mode string) (*testenv.Client, string) {
	t.Helper()
	argv := append([]string{testenv.Mcpepoch(t)}, p.hostArgs(nil)...)
	c := testenv.Driver(t, p.dir, append(env, "MCPEPOCH_DRIVER_ELICITATION="+mode), argv...)
	if _, err := c.List(); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var run string
	waitFor(t, waitLong, "the host to report its agent run", func() bool {
		m := listeningRe.FindStringSubmatch(c.Stderr())
		if m != nil {
			run = m[1]
		}
		return m != nil
	})
	p.ready(run)
	return c, run
}

// nextElicitation waits until the client has received n elicitations and
// returns the n-th.
func nextElicitation(t *testing.T, c *testenv.Client, n int) testenv.Elicitation {
	t.Helper()
	var es []testenv.Elicitation
	waitFor(t, waitLong, "an elicitation/create at the client", func() bool { es, _ = c.Elicitations(); return len(es) >= n })
	return es[n-1]
}

var pageURLRe = regexp.MustCompile(`http://localhost:\d+/[A-Za-z0-9_-]+/`)

// TestElicitURLInBrowser: a TypeScript SDK client declaring url
// elicitation opens the URL it is given in headless Chromium with an
// enrolled virtual authenticator, and the person presses Approve: the held
// call completes, and the client gets notifications/elicitation/complete.
// After a rebuild the next call asks once more and completes after one
// more press. A form-only client at the default proof (presence, once an
// authenticator is enrolled) is told where to approve: its accept keeps
// the call waiting, the press on that page releases it.
func TestElicitURLInBrowser(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	enrollVirtualKey(t, ctx, p, env)
	c, run := tsElicitClient(t, p, env, "url")
	for round, key := range []string{"a", "b"} {
		if round == 1 {
			p.serverWithCounter(map[string]string{"FIXTURE_BUILD": "2"})
			p.record()
			p.ready(run)
		}
		pend := c.CallAsync("slow_write", map[string]any{"key": key})
		e := nextElicitation(t, c, round+1)
		if e.Params.Mode != "url" || !pageURLRe.MatchString(e.Params.URL) || !strings.Contains(e.Params.Message, "inventory-local") {
			t.Fatalf("elicitation %d: %+v", round+1, e.Params)
		}
		if round == 1 && (!strings.Contains(e.Params.Message, "changed") || !strings.Contains(e.Params.Message, "renews")) {
			t.Errorf("elicitation after the rebuild does not offer the renewal and say what changed: %q", e.Params.Message)
		}
		c.Answer(e.N, "accept", nil)
		if st := click(t, ctx, e.Params.URL, "approve"); st != "ok: Approved." {
			t.Fatalf("approval page: %s", st)
		}
		res, rerr := pend.Wait()
		if rerr != nil || !strings.Contains(res.Text(), "count=1") {
			t.Fatalf("held call %s after the press: %v %v", key, res, rerr)
		}
		waitFor(t, waitLong, "notifications/elicitation/complete", func() bool {
			_, done := c.Elicitations()
			return len(done) == round+1 && done[round] == e.Params.ElicitationID
		})
	}
	if es, _ := c.Elicitations(); len(es) != 2 {
		t.Fatalf("%d elicitations for two calls on two epochs, want 2", len(es))
	}
	// Decline on the page: the held call is refused, not forwarded.
	pend := c.CallAsync("publish_preview", map[string]any{"branch": "x"})
	e := nextElicitation(t, c, 3)
	c.Answer(e.N, "accept", nil)
	if st := click(t, ctx, e.Params.URL, "decline"); !strings.Contains(st, "eclined") {
		t.Fatalf("decline on the page: %s", st)
	}
	if _, rerr := pend.Wait(); rerr == nil || rerr.Code == nil || *rerr.Code != host.CodeAuthorizationRequired || !strings.Contains(string(rerr.Data), `"outcome":"declined"`) {
		t.Fatalf("held call after a decline on the page: %v", rerr)
	}
	if gs := filterType(p.records(), audit.TypeApprovalGranted); len(gs) != 2 || gs[1].Fields["renewal"] == nil {
		t.Errorf("approval_granted records: %v, want the second to be the renewal", gs)
	}
	for _, g := range p.grants() {
		if g.Proof != approval.ProofPresence || g.Channel != "web" {
			t.Fatalf("grant %+v: want presence through the page", g)
		}
	}

	f, _ := tsElicitClient(t, p, env, "form")
	pend = f.CallAsync("slow_write", map[string]any{"key": "f"})
	e = nextElicitation(t, f, 1)
	url := pageURLRe.FindString(e.Params.Message)
	if e.Params.Mode == "url" || url == "" || !strings.Contains(e.Params.Message, "cannot approve") {
		t.Fatalf("form elicitation at the default proof: %+v, want the page's URL", e.Params)
	}
	f.Answer(e.N, "accept", map[string]any{})
	p.waitRecords("the form's answer", func(rs []audit.Record) bool { return len(filterType(rs, audit.TypeApprovalAnswered)) == 4 })
	time.Sleep(200 * time.Millisecond) // an accept that counted would have released the call by now
	if cnt, _ := p.counts("f"); cnt != "" {
		t.Fatalf("a form accept released the call at the default proof: %q", cnt)
	}
	if st := click(t, ctx, url, "approve"); st != "ok: Approved." {
		t.Fatalf("approval page named by the form: %s", st)
	}
	if res, rerr := pend.Wait(); rerr != nil || !strings.Contains(res.Text(), "count=1") {
		t.Fatalf("held call after the press: %v %v", res, rerr)
	}
	recs := p.records()
	if n := len(filterType(recs, audit.TypeApprovalAsked)); n != 4 {
		t.Errorf("%d approval_asked records, want 4", n)
	}
}
