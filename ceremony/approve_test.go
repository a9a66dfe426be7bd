package ceremony

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/trust"
)

const up, uv = softkey.FlagUserPresent, softkey.FlagUserVerified

// harness is a Server over a fresh trust store in a private home.
type harness struct {
	t       testing.TB
	srv     *Server
	dir     string
	keys    map[string]*softkey.WebAuthnKey // by authenticator ID
	mu      sync.Mutex
	refused []Refusal
}

func newHarness(t testing.TB, requireUV bool) *harness {
	t.Helper()
	home := t.TempDir()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("HOME", home)
	} else {
		t.(*testing.B).Setenv("HOME", home)
	}
	h := &harness{t: t, dir: filepath.Join(home, ".config", "mcpepoch"), keys: map[string]*softkey.WebAuthnKey{}}
	srv, err := Listen(Config{TrustDir: h.dir, RequireUV: requireUV, Refused: func(r Refusal) {
		h.mu.Lock()
		h.refused = append(h.refused, r)
		h.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h.srv = srv
	return h
}

func (h *harness) refusals() []Refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Refusal(nil), h.refused...)
}

// enroll adds a software credential to the store (the first unsigned,
// later ones signed by the first, as the store requires).
func (h *harness) enroll(k *softkey.WebAuthnKey) {
	h.t.Helper()
	s, err := trust.Open(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	a, err := trust.NewWebAuthn(trust.WebAuthnCredential{CredentialID: k.CredentialID, PublicKey: k.COSEKey(), AAGUID: k.AAGUID}, "soft", time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := s.Propose(trust.OpAdd, a)
	if err != nil {
		h.t.Fatal(err)
	}
	var p *trust.Presence
	if c.Requirement.Presence {
		first := s.Authenticators[0]
		n, ch := first.SignCount+1000, c.Requirement.Challenge
		ad, cd, sig := h.keys[first.ID].RawAssertion(h.srv.Origin(), RPID, ch[:], softkey.FlagUserPresent, n)
		p = &trust.Presence{AuthenticatorID: first.ID, Challenge: ch, SignCount: n,
			Assertion: &trust.Assertion{AuthenticatorData: ad, ClientDataJSON: cd, Signature: sig}}
	}
	if err := s.Apply(c, p); err != nil {
		h.t.Fatal(err)
	}
	h.keys[a.ID] = k
}

func newDigest(t testing.TB) grant.Digest {
	p := &grant.Proposal{V: 1, AgentRun: "01JQ7R2B7Y9V3K5M8N0P4Q6R1S", ExecutionEpoch: "01JQ7R9KQ6K2Y8W4JH0M5N7P3R",
		CatalogRevision: "sha256:1", ToolScope: []string{"inventory_adjust"}, CredentialScope: []string{},
		ExpiresWhen: "30m", Nonce: grant.NewNonce(), AuditHead: grant.AuditHead{Hash: "sha256:" + strings.Repeat("0", 64)}}
	d, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func request(d grant.Digest) Request {
	return Request{Digest: d, Server: "inventory", AgentRun: "01JQ7R2B7Y9V3K5M8N0P4Q6R1S", Epoch: "01JQ7R9KQ6K2Y8W4JH0M5N7P3R",
		ExpiresWhen: "30m", Tools: []string{"inventory_adjust"},
		Identity: []IdentityLine{{Name: "entry", Value: "sha256:aa", Was: "sha256:bb"}},
		Catalog:  []CatalogLine{{Change: "changed", Tool: "inventory_adjust", Detail: `default "count": 1 → 100`}}}
}

// post sends body to the approval step as the page would, from origin.
func post(t testing.TB, a *Approval, step, origin string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", a.URL()+step, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func decided(t testing.TB, a *Approval) (Decision, bool) {
	select {
	case d := <-a.Decided():
		return d, true
	case <-time.After(50 * time.Millisecond):
		return Decision{}, false
	}
}

func TestApproveDeliversTheVerifiedDecision(t *testing.T) {
	h := newHarness(t, false)
	k := softkey.NewWebAuthn()
	h.enroll(k)
	d := newDigest(t)
	a, err := h.srv.Approve(request(d))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.URL(), "http://localhost:") || !strings.HasPrefix(a.URL(), h.srv.Origin()+"/") {
		t.Fatalf("URL %s", a.URL())
	}
	assertion := k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up, 1)
	if code, body := post(t, a, "assert", h.srv.Origin(), assertion); code != 200 {
		t.Fatalf("assert: %d %s", code, body)
	}
	got, ok := decided(t, a)
	if !ok || got.Outcome != Approved || got.Digest != d || got.SignCount != 1 || got.AuthenticatorID == "" {
		t.Fatalf("decision %+v, %v", got, ok)
	}
	s, _ := trust.Open(h.dir)
	if au, _ := s.Lookup(got.AuthenticatorID); au == nil || au.SignCount != 1 {
		t.Fatalf("counter not recorded in the store: %+v", au)
	}
	// Single use: the same assertion again, and the page itself, are gone.
	if code, _ := post(t, a, "assert", h.srv.Origin(), assertion); code == 200 {
		t.Fatal("a replayed assertion was accepted")
	}
}

func TestRefusedAssertions(t *testing.T) {
	h := newHarness(t, true)
	k, stranger := softkey.NewWebAuthn(), softkey.NewWebAuthn()
	h.enroll(k)
	d := newDigest(t)
	other := newDigest(t)
	counter := uint32(10)
	cases := []struct {
		name   string
		origin string // Origin header
		body   func(a *Approval) []byte
		want   string
	}{
		{"unenrolled authenticator", "", func(*Approval) []byte {
			return stranger.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up|uv, 1)
		}, "not"},
		{"user presence false", "", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, uv, counter)
		}, "presence"},
		{"user verification missing where required", "", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up, counter)
		}, "verif"},
		{"another port's origin", "", func(*Approval) []byte {
			return k.Assertion("http://localhost:1", RPID, d[:], userHandle, up|uv, counter)
		}, "origin"},
		{"another relying party", "", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), "example.com", d[:], userHandle, up|uv, counter)
		}, "RP"},
		{"another grant's challenge", "", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), RPID, other[:], userHandle, up|uv, counter)
		}, "hallenge"},
		{"posted from another origin", "http://localhost:1", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up|uv, counter)
		}, "origin"},
		{"counter that did not grow", "", func(*Approval) []byte {
			return k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up|uv, 0)
		}, "counter"},
		{"not JSON", "", func(*Approval) []byte { return []byte("{") }, "WebAuthn"},
	}
	// Record counter 5 first, so "did not grow" has something to be below.
	a0, _ := h.srv.Approve(request(d))
	if code, body := post(t, a0, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up|uv, 5)); code != 200 {
		t.Fatalf("setup approval: %d %s", code, body)
	}
	<-a0.Decided()
	for _, tc := range cases {
		a, _ := h.srv.Approve(request(d))
		origin := tc.origin
		if origin == "" {
			origin = h.srv.Origin()
		}
		before := len(h.refusals())
		code, body := post(t, a, "assert", origin, tc.body(a))
		t.Logf("%s: %s", tc.name, strings.TrimSpace(body))
		if code != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want 403 mentioning %q", tc.name, code, strings.TrimSpace(body), tc.want)
		}
		if _, ok := decided(t, a); ok {
			t.Errorf("%s: a decision was delivered", tc.name)
		}
		if len(h.refusals()) != before+1 {
			t.Errorf("%s: refusal not reported to Config.Refused", tc.name)
		}
		// The page stays open for a real answer.
		if code, body := post(t, a, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up|uv, counter)); code != 200 {
			t.Errorf("%s: a good assertion after the refused one: %d %s", tc.name, code, body)
		}
		counter++
	}
}

func TestSupersededChallengeRefused(t *testing.T) {
	h := newHarness(t, false)
	k := softkey.NewWebAuthn()
	h.enroll(k)
	d1, d2 := newDigest(t), newDigest(t)
	a, _ := h.srv.Approve(request(d1))
	if err := a.Supersede(request(d2)); err != nil {
		t.Fatal(err)
	}
	code, body := post(t, a, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, d1[:], userHandle, up, 1))
	if code != http.StatusForbidden || !strings.Contains(body, "replaced by a newer one") {
		t.Fatalf("assertion over the superseded digest: %d %s", code, body)
	}
	if code, body := post(t, a, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, d2[:], userHandle, up, 2)); code != 200 {
		t.Fatalf("assertion over the current digest: %d %s", code, body)
	}
	if got, ok := decided(t, a); !ok || got.Digest != d2 {
		t.Fatalf("decision %+v", got)
	}
	if err := a.Supersede(request(d1)); !errors.Is(err, ErrDecided) {
		t.Fatalf("Supersede after the decision: %v", err)
	}
}

func TestDeclineAndCancel(t *testing.T) {
	h := newHarness(t, false)
	h.enroll(softkey.NewWebAuthn())
	a, _ := h.srv.Approve(request(newDigest(t)))
	if code, body := post(t, a, "decline", h.srv.Origin(), []byte("{}")); code != 200 {
		t.Fatalf("decline: %d %s", code, body)
	}
	if got, ok := decided(t, a); !ok || got.Outcome != Declined {
		t.Fatalf("decision %+v", got)
	}
	b, _ := h.srv.Approve(request(newDigest(t)))
	b.Cancel()
	b.Cancel()
	if got, ok := decided(t, b); !ok || got.Outcome != Cancelled {
		t.Fatalf("decision %+v", got)
	}
	if resp, err := http.Get(b.URL()); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("cancelled page: %v %v", resp.StatusCode, err)
	}
}

func TestPageServedOnlyToItsHostAndToken(t *testing.T) {
	h := newHarness(t, false)
	h.enroll(softkey.NewWebAuthn())
	d := newDigest(t)
	a, _ := h.srv.Approve(request(d))
	resp, err := http.Get(a.URL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, want := range []string{">Approve<", ">Decline<", d.ShortCode(), "inventory_adjust", "was sha256:bb", "default &#34;count&#34;: 1 → 100"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	// The options embedded in the page carry the digest as the challenge.
	var opts struct {
		PublicKey struct{ Challenge string } `json:"publicKey"`
	}
	i := strings.Index(page, `data-options="`) + len(`data-options="`)
	raw := strings.NewReplacer("&#34;", `"`, "&amp;", "&").Replace(page[i : i+strings.Index(page[i:], `"`)])
	json.Unmarshal([]byte(raw), &opts)
	if opts.PublicKey.Challenge == "" {
		t.Errorf("no challenge in the page's options: %.200s", raw)
	}
	// Wrong token, wrong Host (DNS rebinding).
	if r, _ := http.Get(h.srv.Origin() + "/nope/"); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token: %d", r.StatusCode)
	}
	req, _ := http.NewRequest("GET", strings.Replace(a.URL(), "localhost", "127.0.0.1", 1), nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("page by IP address: %v %v", r.StatusCode, err)
	}
}

// TestApprovalWaitsForTheHostsVerdict: with WaitForHost, a verified
// assertion is answered with what the caller decided on it, a refusal and
// its fix included, never with "approved" before the caller spoke.
func TestApprovalWaitsForTheHostsVerdict(t *testing.T) {
	h := newHarness(t, false)
	k := softkey.NewWebAuthn()
	h.enroll(k)
	for i, verdict := range []error{errors.New("the trust store changed: restart the MCP client's server"), nil} {
		d := newDigest(t)
		req := request(d)
		req.WaitForHost = true
		a, _ := h.srv.Approve(req)
		type answer struct {
			code int
			body string
		}
		got := make(chan answer, 1)
		go func() {
			code, body := post(t, a, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up, uint32(i+1)))
			got <- answer{code, body}
		}()
		if dec := <-a.Decided(); dec.Outcome != Approved {
			t.Fatalf("decision %+v", dec)
		}
		select {
		case ans := <-got:
			t.Fatalf("the page was answered before the caller's verdict: %d %s", ans.code, ans.body)
		case <-time.After(200 * time.Millisecond):
		}
		a.Settle(verdict)
		ans := <-got
		var res struct{ Outcome, Error string }
		if err := json.Unmarshal([]byte(ans.body), &res); err != nil || ans.code != 200 {
			t.Fatalf("answer %d %s", ans.code, ans.body)
		}
		if verdict != nil && (res.Outcome != "refused" || !strings.Contains(res.Error, "restart the MCP client's server")) {
			t.Errorf("refused verdict: the page got %+v", res)
		}
		if verdict == nil && res.Outcome != string(Approved) {
			t.Errorf("approved verdict: the page got %+v", res)
		}
	}
}
