package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestApproveLargeCatalog: a catalog over the local socket's 1 MiB line
// limit is reviewed in pages, and a tool on the last page can be approved
// and called. Sent whole, the review exceeded the limit and no tool could
// ever be approved.
func TestApproveLargeCatalog(t *testing.T) {
	t.Parallel()
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("big_%02d", i))
	}
	// 40 tools of 40 kB: a 1.6 MB catalog.
	p := newGrantsProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": strings.Join(names, ","), "FIXTURE_DESCRIPTION_BYTES": "40000"})
	s := gConnect(t, p)
	if got := len(s.list()); got != 43 {
		t.Fatalf("%d tools listed, want 43", got)
	}
	p.ready(s.run)
	s.rpcError("big_39", nil, -31010, "authorization_required:")
	out, code := p.tryApprove(s.run, "--tools", "big_39")
	if code != 0 {
		t.Fatalf("approve big_39 of a 1.6 MB catalog: exit %d\n%s", code, out)
	}
	if !strings.Contains(out.Stdout, "big_39") {
		t.Errorf("the review does not show the last tool:\n%.2000s", out.Stdout)
	}
	if got := s.text("big_39", nil); !strings.HasPrefix(got, "big_39 args=") {
		t.Errorf("big_39 after approval: %q", got)
	}

	// The review holds live grants only: it does not grow with every
	// grant the run ever had.
	m := approveRe.FindStringSubmatch(out.Stdout)
	if m == nil {
		t.Fatalf("approve printed no grant id:\n%s", out.Stdout)
	}
	p.cli("revoke", m[1])
	dir, err := notify.Dir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	resp, err := notify.Send(ctx, filepath.Join(dir, s.run+notify.SocketSuffix), notify.Request{Type: localapi.TypeReview})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := localapi.DecodePayload[localapi.Review](resp.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(rv.Grants) != 0 {
		t.Errorf("review after revoking the only grant holds %d grants, want 0 (live only)", len(rv.Grants))
	}
	if rv.ToolsTotal != 43 || len(rv.Tools) >= 43 || rv.NextTools != len(rv.Tools) {
		t.Errorf("first review page: %d of %d tools, next %d; want a part of 43 and where the rest starts", len(rv.Tools), rv.ToolsTotal, rv.NextTools)
	}
}
