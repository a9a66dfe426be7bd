package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpwa "github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// chromium is the headless Chromium the browser tests of this process
// share: the first one starts it, TestMain ends it (stopChromium). Each
// test gets a tab of its own, with its own virtual authenticator.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's first tab; new tabs are made from it
	stop func()
	err  error
}

// startChromium starts the shared browser at path, once.
func startChromium(path string) error {
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpepoch-host-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(dir))
		ctx, cancel := chromedp.NewContext(alloc)
		chromium.ctx = ctx
		chromium.stop = func() { cancel(); cancelAlloc(); os.RemoveAll(dir) }
		if err := chromedp.Do(ctx); err != nil {
			chromium.err = fmt.Errorf("start chromium: %v", err)
		}
	})
	return chromium.err
}

// stopChromium ends the shared browser, if a test started it.
func stopChromium() {
	if chromium.stop != nil {
		chromium.stop()
	}
}

// chromiumTab opens a tab of the shared headless Chromium (started on
// first use) with a virtual CTAP2 authenticator answering with user
// presence, closed when the test ends, or ends the test with
// testenv.Missing when Chromium is not installed.
func chromiumTab(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if path = "/usr/bin/chromium"; !fileExists(path) {
			testenv.Missing(t, "chromium is not installed: the presence tests need it (apt-get install chromium)")
		}
	}
	if err := startChromium(path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(chromium.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a chromium tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdpwa.Enable, cdpwa.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdpwa.AddVirtualAuthenticator, cdpwa.AddVirtualAuthenticatorParams{
		Options: &cdpwa.VirtualAuthenticatorOptions{Protocol: cdpwa.AuthenticatorProtocolCtap2,
			Transport: cdpwa.AuthenticatorTransportUsb, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true}}); err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return ctx
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// pageCLI is mcpepoch run in the background that prints a page's URL as
// its first line of stdout.
type pageCLI struct {
	cmd    *exec.Cmd
	url    string
	stderr *testenv.Buffer
}

func startPageCLI(t testing.TB, p *project, env []string, args ...string) *pageCLI {
	t.Helper()
	cmd := exec.Command(testenv.Mcpepoch(t), args...)
	cmd.Dir, cmd.Env = p.dir, testenv.Environ(env...)
	c := &pageCLI{cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The first line, or the end of stdout when mcpepoch exits first;
	// bounded, so that a command that hangs before printing fails the
	// test with what it said instead of holding it until go test's timeout.
	type first struct {
		line string
		err  error
	}
	got := make(chan first, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		got <- first{line, err}
	}()
	select {
	case f := <-got:
		if f.err != nil || !strings.HasPrefix(f.line, "http://localhost:") {
			t.Fatalf("mcpepoch %v: first line %q (%v)\n%s", args, f.line, f.err, c.stderr)
		}
		c.url = strings.TrimSpace(f.line)
	case <-time.After(waitLong):
		t.Fatalf("mcpepoch %v printed no URL within %s (still running)\n%s", args, waitLong, c.stderr)
	}
	return c
}

// asPerson returns env with MCPEPOCH_TEST_PERSON=1: the test build's
// stand-in for the person a first enrollment needs at a terminal
// (cmd/mcpepoch/testbuild.go).
func asPerson(env []string) []string {
	return append(slices.Clone(env), "MCPEPOCH_TEST_PERSON=1")
}

// wait returns the exit status.
func (c *pageCLI) wait(t testing.TB) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(waitLong):
		t.Fatalf("mcpepoch did not exit within %s\n%s", waitLong, c.stderr)
	}
	return -1
}

// enrollVirtualKey enrolls the tab's virtual authenticator with mcpepoch
// enroll --web as a person (asPerson), pressing "Register" on its page;
// it fails the test unless the page says ok and the command exits 0, and
// returns what the command wrote on stderr.
func enrollVirtualKey(t testing.TB, ctx context.Context, p *project, env []string) string {
	t.Helper()
	enroll := startPageCLI(t, p, asPerson(env), "enroll", "--web", "--no-open", "--name", "virtual key")
	if s := click(t, ctx, enroll.url, "register"); !strings.HasPrefix(s, "ok:") {
		t.Fatalf("registration page: %s\n%s", s, enroll.stderr.String())
	}
	if code := enroll.wait(t); code != 0 {
		t.Fatalf("enroll --web: exit %d\n%s", code, enroll.stderr.String())
	}
	return enroll.stderr.String()
}

// click opens url in the tab, clicks the button with id and waits for the
// page's final status.
func click(t testing.TB, ctx context.Context, url, id string) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Navigate(url), chromedp.Click(chromedp.ID(id))); err != nil {
		t.Fatal(err)
	}
	s, err := chromedp.Run(c, chromedp.Poll[string](`(s => s.className ? s.className + ": " + s.textContent : false)(document.getElementById("status"))`))
	if err != nil {
		t.Fatalf("page status: %v", err)
	}
	return s
}

// TestPresenceApprovalInBrowser: a WebAuthn authenticator enrolled with
// mcpepoch enroll --web makes presence the default proof; the refused call
// passes once the person approves on the page mcpepoch approve --web
// prints, and the grant records presence; an approval whose epoch was
// superseded while the page was open is refused and audited.
func TestPresenceApprovalInBrowser(t *testing.T) {
	t.Parallel()
	ctx := chromiumTab(t)
	p, env := newDefaultProofProject(t)
	if out := enrollVirtualKey(t, ctx, p, env); !strings.Contains(out, "trusted on first use") {
		t.Fatalf("enroll --web:\n%s", out)
	}

	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	data := s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationRequired, "authorization_required:")
	if a, _ := data["action"].(string); !strings.Contains(a, "enrolled authenticator") {
		t.Errorf("action %q: want the authenticator", a)
	}
	if out, code := p.runCLI(env, "approve", "--yes", "--run", s.run, "--tools", "slow_write", "--credential", gStaging); code == 0 {
		t.Fatalf("approve --yes with presence the default: exit 0\n%s", out)
	}

	args := []string{"approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write", "--credential", gStaging}
	ap := startPageCLI(t, p, env, args...)
	if st := click(t, ctx, ap.url, "approve"); st != "ok: Approved." {
		t.Fatalf("approval page: %s", st)
	}
	if code := ap.wait(t); code != 0 || !strings.Contains(ap.stderr.String(), "proof presence") ||
		!strings.Contains(ap.stderr.String(), `root of the trust store: webauthn "virtual key"`) ||
		!strings.Contains(ap.stderr.String(), "WARNING: the root was enrolled without attestation") {
		t.Fatalf("approve --web: exit %d\n%s", code, ap.stderr)
	}
	if got := s.text("slow_write", map[string]any{"key": "k"}); !strings.Contains(got, "count=1") {
		t.Fatalf("slow_write after the approval: %q", got)
	}
	gs := p.grants()
	if len(gs) != 1 || gs[0].Proof != approval.ProofPresence || gs[0].Channel != "web" || gs[0].Authenticator == "" || gs[0].SignedDigest == "" {
		t.Fatalf("grants: %+v, want one presence grant", gs)
	}

	// The page of a superseded epoch.
	late := startPageCLI(t, p, env, args...)
	p.cli("restart")
	// The page shows the host's refusal, not the signature's success.
	if st := click(t, ctx, late.url, "approve"); !strings.HasPrefix(st, "error: Not approved:") || !strings.Contains(st, "epoch changed") {
		t.Errorf("page of a superseded epoch after the press: %q, want the host's refusal", st)
	}
	if code := late.wait(t); code == 0 || !strings.Contains(late.stderr.String(), "epoch changed") {
		t.Fatalf("approval of a superseded epoch: exit %d\n%s", code, late.stderr)
	}
	s.list()
	s.rpcError("slow_write", map[string]any{"key": "k"}, host.CodeAuthorizationStale, "authorization_stale:")
	p.waitRecords("approval_refused of the superseded epoch", func(rs []audit.Record) bool {
		for _, r := range filterType(rs, audit.TypeApprovalRefused) {
			if r.Fields["channel"] == "web" && strings.Contains(r.Fields["reason"].(string), "epoch changed") {
				return true
			}
		}
		return false
	})
}
