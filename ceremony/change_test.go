package ceremony

import (
	"html"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/trust"
)

func TestApproveChangeAppliesItOnATouch(t *testing.T) {
	h := newHarness(t, false)
	k := softkey.NewWebAuthn()
	h.enroll(k)
	s, _ := trust.Open(h.dir)
	key, err := trust.NewSSH(softkey.NewSSHEd25519().AuthorizedKey("laptop"), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Propose(trust.OpAdd, key)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.srv.ApproveChange(c)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(a.URL())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"Trust a new authenticator", key.ID, c.Requirement.Challenge.ShortCode(), ">Approve<"} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	ch := c.Requirement.Challenge
	if code, body := post(t, a, "assert", h.srv.Origin(), k.Assertion(h.srv.Origin(), RPID, ch[:], userHandle, up, 1)); code != 200 {
		t.Fatalf("assert: %d %s", code, body)
	}
	if d, ok := decided(t, a); !ok || d.Outcome != Approved || d.Digest != ch {
		t.Fatalf("decision %+v", d)
	}
	back, _ := trust.Open(h.dir)
	got, ok := back.Lookup(key.ID)
	if !ok || got.AddedBy != back.Authenticators[0].ID || back.Authenticators[0].SignCount != 1 {
		t.Fatalf("store after the change: %+v", back.Authenticators)
	}

	// Removal, declined: nothing changes.
	rm, _ := back.Propose(trust.OpRemove, *got)
	b, _ := h.srv.ApproveChange(rm)
	if err := b.Supersede(request(newDigest(t))); err == nil || !strings.Contains(err.Error(), "store change") {
		t.Fatalf("a store change was superseded: %v", err)
	}
	if code, body := post(t, b, "decline", h.srv.Origin(), []byte("{}")); code != 200 {
		t.Fatalf("decline: %d %s", code, body)
	}
	if again, _ := trust.Open(h.dir); len(again.Authenticators) != 2 {
		t.Fatalf("declined removal changed the store: %+v", again.Authenticators)
	}
}

func TestApproveChangeRefusesUnsignedFirstEnrollment(t *testing.T) {
	h := newHarness(t, false)
	s, _ := trust.Open(h.dir)
	a, _ := trust.NewSSH(softkey.NewSSHEd25519().AuthorizedKey("k"), "", time.Now())
	c, _ := s.Propose(trust.OpAdd, a)
	if _, err := h.srv.ApproveChange(c); err == nil {
		t.Fatal("ApproveChange took a change that needs no presence signature")
	}
}
