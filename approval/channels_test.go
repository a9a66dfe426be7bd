package approval

import (
	"os"
	"strings"
	"testing"
)

// AskMode asks on the page whenever the client offers it, but by form
// when a form's accept counts and nothing could sign on the page.
func TestAskMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		form, url  bool
		need       Proofs
		enrolled   bool
		mode       string
		formCounts bool
	}{
		{true, false, DefaultProof(false), false, ModeForm, true},
		{true, false, DefaultProof(true), true, ModeForm, false},
		{false, true, DefaultProof(false), false, ModeURL, true},
		{true, true, DefaultProof(false), false, ModeForm, true}, // nothing to sign with: the form's accept counts
		{true, true, DefaultProof(false), true, ModeURL, true},
		{true, true, Proofs{ProofTerminal}, false, ModeURL, false},
		{true, true, Proofs{ProofSameUser}, false, ModeForm, true},
	} {
		mode, counts := AskMode(tc.form, tc.url, tc.need, tc.enrolled)
		if mode != tc.mode || counts != tc.formCounts {
			t.Errorf("AskMode(form %v, url %v, [%v], enrolled %v) = %s, %v; want %s, %v",
				tc.form, tc.url, tc.need, tc.enrolled, mode, counts, tc.mode, tc.formCounts)
		}
	}
}

// The request's channel is a claim that only lowers what a process
// proves; a host that cannot identify its client, or a socket that does
// not name the peer, proves no terminal whatever the claim.
func TestTerminalClaimOnlyLowers(t *testing.T) {
	t.Parallel()
	self := os.Getpid()
	for _, tc := range []struct {
		name    string
		l       Launch
		asked   bool
		pid     int
		channel string
		why     string
	}{
		{"not asked", Launch{}, false, self, ChannelScript, "nobody was asked at a terminal"},
		{"no peer", Launch{}, true, 0, ChannelTerminal, "the socket does not say which process asked"},
		{"client unknown", Launch{unknown: "it leads a session of its own"}, true, self, ChannelTerminal, "this host cannot identify its MCP client: it leads a session of its own"},
	} {
		pr := tc.l.Terminal(tc.asked, tc.pid, 0)
		if pr.Proof != ProofSameUser || pr.Channel != tc.channel || pr.Why != tc.why {
			t.Errorf("%s: %+v, want same-user on channel %s because %q", tc.name, pr, tc.channel, tc.why)
		}
	}
}

// A form's accept proves client only from a client the host identified;
// undecidable, it still counts, marked unverified.
func TestClientAccept(t *testing.T) {
	t.Parallel()
	pr := Launch{unknown: "its parent has gone"}.Client("probe 1.0")
	if pr.Proof != ProofSameUser || pr.Channel != ChannelClient || !strings.Contains(pr.Why, "cannot identify its MCP client") {
		t.Errorf("unknown client: %+v, want same-user, refused", pr)
	}
	pr = Launch{}.Client("probe 1.0")
	if pr.Proof != ProofClient || pr.Why != "accepted in the MCP client probe 1.0" || pr.Unverified != "client unverified: the MCP client above this host is not known" {
		t.Errorf("client not found above the host: %+v, want client, unverified", pr)
	}
	if note := (Launch{unknown: "x"}).ClientUnknown(); !strings.Contains(note, "(x): no approval counts as terminal or client") {
		t.Errorf("ClientUnknown = %q", note)
	}
	if note := (Launch{}).ClientUnknown(); note != "" {
		t.Errorf("ClientUnknown of an identified client = %q, want empty", note)
	}
}

// Shortfall says nothing for what counts, and for what does not, what
// was proven, why no more, what counts and how a person approves.
func TestShortfall(t *testing.T) {
	t.Parallel()
	pr := Proven{Proof: ProofSameUser, Channel: ChannelTerminal, Why: "no controlling terminal"}
	if s := pr.Shortfall(Proofs{ProofSameUser}); s != "" {
		t.Errorf("same-user under [same-user]: %q, want it counts", s)
	}
	s := pr.Shortfall(DefaultProof(false))
	for _, want := range []string{"proves only same-user (no controlling terminal)", "counts only terminal, client as a person's approval", "approve in their own terminal"} {
		if !strings.Contains(s, want) {
			t.Errorf("Shortfall = %q, want %q in it", s, want)
		}
	}
	if s := (Proven{Proof: ProofTerminal}).Shortfall(Proofs{ProofPresence}); !strings.Contains(s, "proves only terminal, and") || !strings.Contains(s, "enrolled authenticator") {
		t.Errorf("terminal under [presence]: %q", s)
	}
}

// Presence on the page counts only over the proposal the page showed,
// and only with the trust store pinned at start.
func TestPresenceChannels(t *testing.T) {
	t.Parallel()
	if pr, err := Web("aa", "aa", "w1", 7); err != nil || pr.Proof != ProofPresence || pr.Channel != ChannelWeb || pr.Authenticator != "w1" || pr.SignCount != 7 || pr.Digest != "aa" {
		t.Errorf("Web over the proposal: %+v, %v", pr, err)
	}
	if _, err := Web("bb", "aa", "w1", 7); err == nil {
		t.Error("Web over another digest: counted")
	}
	if pr := SSH("aa", "SIG", "s1", 3); pr.Proof != ProofPresence || pr.Channel != ChannelSSH || pr.Signature != "SIG" || pr.Digest != "aa" {
		t.Errorf("SSH: %+v", pr)
	}
	if err := Pinned("sha256:1", "sha256:1", "/s"); err != nil {
		t.Errorf("the pinned store: %v", err)
	}
	for _, c := range [][2]string{{"", "sha256:1"}, {"sha256:0", "sha256:1"}, {"", ""}} { // "": the store could not be read at start
		if err := Pinned(c[0], c[1], "/s"); err == nil || !strings.Contains(err.Error(), "changed since the host started") {
			t.Errorf("pinned %q, found %q: %v", c[0], c[1], err)
		}
	}
	if err := WebCanApprove(1, 0); err != nil {
		t.Errorf("a WebAuthn authenticator enrolled: %v", err)
	}
	if err := WebCanApprove(0, 2); err == nil || !strings.Contains(err.Error(), "only ssh keys") {
		t.Errorf("only ssh keys: %v", err)
	}
	if err := WebCanApprove(0, 0); err == nil || !strings.Contains(err.Error(), "no authenticator enrolled") {
		t.Errorf("nothing enrolled: %v", err)
	}
}
