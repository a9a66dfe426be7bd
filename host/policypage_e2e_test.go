package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/trust"
)

var changeCodeRe = regexp.MustCompile(`\(change code (\S+)\):`)

// TestPolicyAcceptOnPage: with only a WebAuthn authenticator enrolled
// (presence the default proof), a tool added to grants.exempt is not
// applied; mcpepoch policy accept --web serves a page that shows the
// weakening old → new with the change code, and one touch accepts it. The
// running host verifies the assertion kept in the floor against the
// trust store it pinned, takes the floor at the next build signal and
// puts it in force from the next epoch. The same assertion kept with
// another weakening written into the floor file is refused and audited.
func TestPolicyAcceptOnPage(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	enrollVirtualKey(t, ctx, p, env)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `exempt = ["version"]`, `exempt = ["version", "slow_write"]`, 1))
	p.record()
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")

	acceptWeakeningOnPage(t, ctx, p, env)
	p.record() // the host reads the accepted floor
	p.serverWithCounter(map[string]string{"FIXTURE_REVISION": "B"})
	p.record() // and puts it in force from the next epoch
	s.list()
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "revision=B") {
		t.Errorf("slow_write once exempt: %q", got)
	}
	if !strings.Contains(s.stderr.String(), "policy floor: accepted by a person (presence") {
		t.Errorf("the host did not take the accepted floor:\n%s", s.stderr)
	}

	// The page's assertion, kept with another weakening.
	dir := filepath.Join(p.dir, "config", "mcpepoch")
	path := trust.FloorPath(dir, trust.FloorRoot(p.dir))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var held trust.Floor
	if err := json.Unmarshal(b, &held); err != nil || held.Accepted == nil || held.Accepted.WebAuthn == nil {
		t.Fatalf("floor file after the accept: %v\n%s", err, b)
	}
	forged := held
	forged.Exempt = append(forged.Exempt, "publish_preview")
	acc := *held.Accepted
	acc.From = held.Digest().String()
	forged.Accepted = &acc
	fb, _ := json.MarshalIndent(forged, "", "  ")
	if err := os.WriteFile(path, fb, 0o600); err != nil {
		t.Fatal(err)
	}
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `exempt = ["version", "slow_write"]`, `exempt = ["version", "slow_write", "publish_preview"]`, 1))
	p.record()
	p.waitRecords("policy_floor_refused of the forged floor", func(rs []audit.Record) bool {
		for _, r := range filterType(rs, audit.TypePolicyFloorRefused) {
			if strings.Contains(r.Fields["why"].(string), "does not verify") {
				return true
			}
		}
		return false
	})
}

// acceptWeakeningOnPage runs mcpepoch policy accept --web for the project's
// one weakening, grants.exempt gaining slow_write, checks that the page
// shows it old → new with the command's change code, presses Accept and
// fails the test unless the page and the command say it was accepted.
func acceptWeakeningOnPage(t *testing.T, ctx context.Context, p *project, env []string) {
	t.Helper()
	page := startPageCLI(t, p, env, "policy", "accept", "--web", "--no-open")
	waitFor(t, waitLong, "the change code", func() bool { return changeCodeRe.MatchString(page.stderr.String()) })
	code := changeCodeRe.FindStringSubmatch(page.stderr.String())[1]
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Navigate(page.url)); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(c, chromedp.Text("#weakenings"))
	if err != nil || !strings.Contains(rows, "grants.exempt") || !strings.Contains(rows, `["version"]`) || !strings.Contains(rows, `["version", "slow_write"]`) {
		t.Errorf("the page does not show the weakening old → new: %q (%v)", rows, err)
	}
	if got, _ := chromedp.Run(c, chromedp.Text("#code")); got != code {
		t.Errorf("page code %q, want the change code %s", got, code)
	}
	if st := click(t, ctx, page.url, "approve"); st != "ok: Accepted." {
		t.Fatalf("accept on the page: %s\n%s", st, page.stderr)
	}
	if rc := page.wait(t); rc != 0 || !strings.Contains(page.stderr.String(), "accepted (proof presence)") {
		t.Fatalf("policy accept --web: exit %d\n%s", rc, page.stderr)
	}
}

// TestPolicyAcceptOnPageWhileNoHostRuns: the weakening is accepted on the
// page while no host runs; the next host to start checks the acceptance
// against the floor the audit log says the last host held, verifies the
// assertion against the trust store it pins, and puts the weaker policy
// in force (no file to delete).
func TestPolicyAcceptOnPageWhileNoHostRuns(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	enrollVirtualKey(t, ctx, p, env)
	first := gConnect(t, p, env...)
	first.list()
	p.ready(first.run)
	first.close()
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `exempt = ["version"]`, `exempt = ["version", "slow_write"]`, 1))
	acceptWeakeningOnPage(t, ctx, p, env)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Errorf("slow_write once exempt: %q", got)
	}
	if strings.Contains(s.stderr.String(), "refused") {
		t.Errorf("the host refused the floor accepted on the page:\n%s", s.stderr)
	}
}
