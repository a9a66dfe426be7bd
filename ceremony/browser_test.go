package ceremony

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cdpwa "github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// The tests below drive real headless Chromium over the DevTools protocol,
// with virtual authenticators (WebAuthn domain) standing in for a security
// key: the browser builds client data, the authenticator signs, and the
// page posts what a person's browser would.

// browser starts one headless Chromium for a test, or skips the test when
// none is installed (fails under CI=true).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		path = "/usr/bin/chromium"
		if _, err := os.Stat(path); err != nil {
			testenv.Missing(t, "chromium is not installed: the browser ceremony tests need it (apt-get install chromium)")
		}
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start the browser, untimed (a timeout here would end it)
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// tab opens a new tab with the WebAuthn domain enabled.
func tab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tctx); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tctx, cdpwa.Enable, cdpwa.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	return tctx
}

// authenticator adds a CTAP2 USB virtual authenticator to the tab that
// answers every request with user presence and verification.
func authenticator(t *testing.T, ctx context.Context) cdpwa.AuthenticatorID {
	t.Helper()
	res, err := chromedp.Call(ctx, cdpwa.AddVirtualAuthenticator, cdpwa.AddVirtualAuthenticatorParams{
		Options: &cdpwa.VirtualAuthenticatorOptions{Protocol: cdpwa.AuthenticatorProtocolCtap2,
			Transport: cdpwa.AuthenticatorTransportUsb, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return res.AuthenticatorID
}

// step runs actions with a time limit.
func step(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatal(err)
	}
}

// outcome waits for the page's final status line (class ok or error).
func outcome(t *testing.T, ctx context.Context) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Poll[string](`(s => s.className ? s.className + ": " + s.textContent : false)(document.getElementById("status"))`))
	if err != nil {
		t.Fatalf("page status: %v", err)
	}
	return s
}

// eval runs an async script in the page and returns its string result.
func eval(t *testing.T, ctx context.Context, script string) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return s
}

// enrollInBrowser registers the tab's authenticator through the Register
// page and returns what was enrolled.
func enrollInBrowser(t *testing.T, h *harness, ctx context.Context) Enrolled {
	t.Helper()
	e, err := h.srv.Enroll("virtual key", trust.EnrolledTerminal)
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, chromedp.Navigate(e.URL()), chromedp.Click(chromedp.ID("register")))
	if s := outcome(t, ctx); !strings.HasPrefix(s, "ok:") {
		t.Fatalf("registration page: %s", s)
	}
	select {
	case got := <-e.Done():
		return got
	case <-time.After(5 * time.Second):
		t.Fatal("enrollment not delivered")
	}
	return Enrolled{}
}

// text returns the text of the element with id, waiting at most 20 s.
func text(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("#%s: %v", id, err)
	}
	return s
}

// decision waits at most 5 s for a's decision.
func decision(t *testing.T, a *Approval) Decision {
	t.Helper()
	select {
	case d := <-a.Decided():
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no decision delivered")
	}
	return Decision{}
}

func noDecision(t *testing.T, a *Approval, what string) {
	t.Helper()
	select {
	case d := <-a.Decided():
		t.Errorf("%s: decision delivered: %+v", what, d)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestBrowserFirstRegistrationNeedsRootPage: while nothing is enrolled, a
// registration page opened without a root proof refuses, and writes no
// store; the caller that guarded the person opens one that may.
func TestBrowserFirstRegistrationNeedsRootPage(t *testing.T) {
	ctx := tab(t, browser(t))
	authenticator(t, ctx)
	h := newHarness(t, true)
	e, _ := h.srv.Enroll("unguarded", "")
	step(t, ctx, chromedp.Navigate(e.URL()), chromedp.Click(chromedp.ID("register")))
	if s := outcome(t, ctx); !strings.Contains(s, "may not add the first") {
		t.Fatalf("unguarded first registration: %s", s)
	}
	if s, err := trust.Open(h.dir); err != nil || len(s.Authenticators) != 0 {
		t.Fatalf("store after the refused registration: %v %v", s, err)
	}
	if got := enrollInBrowser(t, h, ctx); got.Authenticator.Enrolled != trust.EnrolledTerminal {
		t.Fatalf("root enrolled %q, want %q", got.Authenticator.Enrolled, trust.EnrolledTerminal)
	}
}

func TestBrowserEnrollApprove(t *testing.T) {
	ctx := tab(t, browser(t))
	authenticator(t, ctx)
	h := newHarness(t, true)
	got := enrollInBrowser(t, h, ctx)
	// Chromium's virtual authenticator answers "direct" with a packed
	// statement by a self-signed batch certificate: kept, not attested.
	if e, v := got.Authenticator.Evidence, got.Authenticator.Attestation(); e == nil || e.Format != "packed" || v.OK || !strings.Contains(v.Why, "unknown authority") {
		t.Fatalf("attestation %+v: %+v, want a packed statement kept, unattested", e, v)
	}
	if !got.FirstUse || got.Authenticator.Kind != "webauthn" || got.Authenticator.Name != "virtual key" {
		t.Fatalf("enrolled %+v", got)
	}
	d := newDigest(t)
	a, _ := h.srv.Approve(request(d))
	step(t, ctx, chromedp.Navigate(a.URL()))
	if code := text(t, ctx, "code"); code != d.ShortCode() {
		t.Fatalf("page shows code %q, want %s", code, d.ShortCode())
	}
	if root, warn := text(t, ctx, "root"), text(t, ctx, "root-warning"); !strings.Contains(root, "virtual key") || !strings.Contains(root, got.Authenticator.ID) || !strings.Contains(warn, trust.UnattestedWarning) {
		t.Fatalf("page shows root %q, warning %q", root, warn)
	}
	step(t, ctx, chromedp.Click(chromedp.ID("approve")))
	if s := outcome(t, ctx); s != "ok: Approved." {
		t.Fatalf("approval page: %s", s)
	}
	if dec := decision(t, a); dec.Outcome != Approved || dec.Digest != d || dec.AuthenticatorID != got.Authenticator.ID || !dec.UserVerified || dec.SignCount == 0 {
		t.Fatalf("decision %+v", dec)
	}

	// Decline needs no touch.
	b, _ := h.srv.Approve(request(newDigest(t)))
	step(t, ctx, chromedp.Navigate(b.URL()), chromedp.Click(chromedp.ID("decline")))
	if s := outcome(t, ctx); s != "ok: Declined." {
		t.Fatalf("decline: %s", s)
	}
	if dec := decision(t, b); dec.Outcome != Declined {
		t.Fatalf("decision %+v", dec)
	}
}

// TestBrowserSecondEnrollmentNeedsEnrolledTouch: a second authenticator is
// trusted only after the enrolled one signs the change.
func TestBrowserSecondEnrollmentNeedsEnrolledTouch(t *testing.T) {
	ctx := tab(t, browser(t))
	first := authenticator(t, ctx)
	h := newHarness(t, false)
	enrolledFirst := enrollInBrowser(t, h, ctx)
	second := authenticator(t, ctx)
	// Only the new authenticator answers the registration.
	presence := func(id cdpwa.AuthenticatorID, on bool) {
		if _, err := chromedp.Call(ctx, cdpwa.SetAutomaticPresenceSimulation, cdpwa.SetAutomaticPresenceSimulationParams{AuthenticatorID: id, Enabled: on}); err != nil {
			t.Fatal(err)
		}
	}
	presence(first, false)
	e, _ := h.srv.Enroll("second key", "")
	step(t, ctx, chromedp.Navigate(e.URL()), chromedp.Click(chromedp.ID("register")))
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[bool](`!document.getElementById("confirm").hidden`)); err != nil {
		t.Fatalf("no Confirm step: %v", err)
	}
	select {
	case got := <-e.Done():
		t.Fatalf("second authenticator enrolled before an enrolled one confirmed: %+v", got)
	default:
	}
	presence(first, true)
	presence(second, false)
	step(t, ctx, chromedp.Click(chromedp.ID("confirm")))
	if s := outcome(t, ctx); s != "ok: Registered." {
		t.Fatalf("confirm: %s", s)
	}
	var got Enrolled
	select {
	case got = <-e.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("second enrollment not delivered")
	}
	if got.FirstUse || got.Authenticator.AddedBy != enrolledFirst.Authenticator.ID {
		t.Fatalf("second enrollment %+v, want added by %s", got, enrolledFirst.Authenticator.ID)
	}
}

func TestBrowserRefusals(t *testing.T) {
	bctx := browser(t)
	ctx := tab(t, bctx)
	va := authenticator(t, ctx)
	h := newHarness(t, false)
	enrollInBrowser(t, h, ctx)

	t.Run("unenrolled authenticator", func(t *testing.T) {
		a, _ := h.srv.Approve(request(newDigest(t)))
		step(t, ctx, chromedp.Navigate(a.URL()))
		// A credential the trust store never saw, made in this page, signs
		// the right challenge.
		msg := eval(t, ctx, `(async () => {
			const c = await navigator.credentials.create({publicKey: {rp: {id: "localhost", name: "other"},
				user: {id: new Uint8Array([7]), name: "other", displayName: "other"}, challenge: new Uint8Array(32),
				pubKeyCredParams: [{type: "public-key", alg: -7}]}});
			const o = {...mcpepoch.opts.publicKey, allowCredentials: [{type: "public-key", id: c.id}]};
			const a = await mcpepoch.get({publicKey: o});
			try { await mcpepoch.post("assert", a); return "accepted"; } catch (e) { return e.message; }
		})()`)
		if !strings.Contains(msg, "not owned") {
			t.Errorf("assertion by an unenrolled credential: %q", msg)
		}
		noDecision(t, a, "unenrolled")
	})

	t.Run("user presence false", func(t *testing.T) {
		bad := true
		if _, err := chromedp.Call(ctx, cdpwa.SetResponseOverrideBits, cdpwa.SetResponseOverrideBitsParams{AuthenticatorID: va, IsBadUP: &bad}); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Call(ctx, cdpwa.SetResponseOverrideBits, cdpwa.SetResponseOverrideBitsParams{AuthenticatorID: va})
		a, _ := h.srv.Approve(request(newDigest(t)))
		step(t, ctx, chromedp.Navigate(a.URL()), chromedp.Click(chromedp.ID("approve")))
		if s := outcome(t, ctx); !strings.Contains(s, "User presence required") {
			t.Errorf("assertion without user presence: %s", s)
		}
		noDecision(t, a, "no presence")
	})

	t.Run("assertion for another port's origin", func(t *testing.T) {
		other, err := Listen(Config{TrustDir: h.dir})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		d := newDigest(t)
		a, _ := h.srv.Approve(request(d))
		decoy, _ := other.Approve(request(d)) // same digest, same RP ID, another port
		step(t, ctx, chromedp.Navigate(decoy.URL()))
		assertion := eval(t, ctx, `mcpepoch.get(mcpepoch.opts).then(JSON.stringify)`)
		code, body := post(t, a, "assert", h.srv.Origin(), []byte(assertion))
		if code != http.StatusForbidden || !strings.Contains(body, "origin") {
			t.Errorf("assertion made at %s posted to %s: %d %s", other.Origin(), h.srv.Origin(), code, body)
		}
		noDecision(t, a, "other origin")
	})

	t.Run("replayed assertion", func(t *testing.T) {
		d := newDigest(t)
		a, _ := h.srv.Approve(request(d))
		step(t, ctx, chromedp.Navigate(a.URL()))
		assertion := []byte(eval(t, ctx, `mcpepoch.get(mcpepoch.opts).then(JSON.stringify)`))
		if code, body := post(t, a, "assert", h.srv.Origin(), assertion); code != 200 {
			t.Fatalf("first use: %d %s", code, body)
		}
		decision(t, a)
		if code, body := post(t, a, "assert", h.srv.Origin(), assertion); code == 200 {
			t.Errorf("replay accepted: %s", body)
		}
		// Replayed into a new request for the same grant, its counter gives it away.
		b, _ := h.srv.Approve(request(d))
		if code, body := post(t, b, "assert", h.srv.Origin(), assertion); code != http.StatusForbidden || !strings.Contains(body, "counter") {
			t.Errorf("replay into a new request: %d %s", code, body)
		}
		noDecision(t, b, "replay")
	})

	t.Run("superseded challenge", func(t *testing.T) {
		d1, d2 := newDigest(t), newDigest(t)
		a, _ := h.srv.Approve(request(d1))
		step(t, ctx, chromedp.Navigate(a.URL()))
		if err := a.Supersede(request(d2)); err != nil {
			t.Fatal(err)
		}
		step(t, ctx, chromedp.Click(chromedp.ID("approve")))
		if s := outcome(t, ctx); !strings.Contains(s, "replaced by a newer one") {
			t.Errorf("approval of the superseded request: %s", s)
		}
		noDecision(t, a, "superseded")
		step(t, ctx, chromedp.Reload())
		if code := text(t, ctx, "code"); code != d2.ShortCode() {
			t.Fatalf("reloaded page shows %s, want %s", code, d2.ShortCode())
		}
		step(t, ctx, chromedp.Click(chromedp.ID("approve")))
		if s := outcome(t, ctx); s != "ok: Approved." {
			t.Fatalf("approval of the current request: %s", s)
		}
		if dec := decision(t, a); dec.Digest != d2 {
			t.Fatalf("decision for %s, want %s", dec.Digest, d2)
		}
	})

	if n := len(h.refusals()); n < 4 {
		t.Errorf("%d refusals reported to Config.Refused, want one per refused assertion", n)
	}
}

// TestBrowserApprovalPageWithNothingEnrolled: with no authenticator to
// sign with, the page says so and offers no Approve button to press.
func TestBrowserApprovalPageWithNothingEnrolled(t *testing.T) {
	ctx := tab(t, browser(t))
	h := newHarness(t, false)
	a, _ := h.srv.Approve(request(newDigest(t)))
	step(t, ctx, chromedp.Navigate(a.URL()))
	if s := outcome(t, ctx); !strings.Contains(s, "error") || !strings.Contains(s, "enrolled") {
		t.Errorf("status with nothing enrolled: %q", s)
	}
	if s := eval(t, ctx, `(async () => String(document.getElementById("approve").hidden))()`); s != "true" {
		t.Errorf("the Approve button is offered with nothing enrolled (hidden=%s)", s)
	}
}
