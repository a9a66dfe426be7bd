package host_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestSSHProposalsAreBounded: a process that asks for ssh proposals in a
// loop makes the oldest ones go instead of the host's memory grow. After
// 65 proposals (the bound is 64) the first is gone — its signature finds
// no proposal — and the newest still makes a grant.
func TestSSHProposalsAreBounded(t *testing.T) {
	t.Parallel()
	key := softkey.NewSSHEd25519()
	a, _ := trust.NewSSH(key.AuthorizedKey("test key"), "test key", time.Now())
	send, answers := proposeMany(t, a, localapi.TypeProposeSSH)
	first, last := digest(t, answers[0]), digest(t, answers[len(answers)-1])
	_, err := send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: first.String(), Signature: string(key.SSHSIG(sshsig.GrantNamespace, first[:], softkey.FlagUserPresent, 1))})
	var re *notify.RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "no pending proposal") {
		t.Fatalf("signature for the first of 65 proposals: %v, want no pending proposal", err)
	}
	resp, err := send(localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: last.String(), Signature: string(key.SSHSIG(sshsig.GrantNamespace, last[:], softkey.FlagUserPresent, 2))})
	if err != nil {
		t.Fatalf("signature for the newest proposal: %v", err)
	}
	if g, _ := localapi.DecodePayload[grant.Grant](resp.Payload); g.Proof != approval.ProofPresence || g.SignedDigest != last.String() {
		t.Fatalf("grant %+v", g)
	}
}

// TestApprovalPagesAreBounded: the same for approval pages: after 65
// pages the first is cancelled and forgotten, the newest still waits for
// its decision.
func TestApprovalPagesAreBounded(t *testing.T) {
	t.Parallel()
	k := softkey.NewWebAuthn()
	a, err := trust.NewWebAuthn(trust.WebAuthnCredential{CredentialID: k.CredentialID, PublicKey: k.COSEKey(), AAGUID: k.AAGUID}, "root", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	send, answers := proposeMany(t, a, localapi.TypeApproveWeb)
	var re *notify.RemoteError
	_, err = send(localapi.TypeApproveWait, localapi.WaitRequest{Digest: answers[0].Digest})
	if !errors.As(err, &re) || !strings.Contains(re.Message, "no approval page") {
		t.Fatalf("the first of 65 pages: %v, want it gone", err)
	}
	for i, want := range map[int]int{0: http.StatusNotFound, len(answers) - 1: http.StatusOK} {
		resp, err := http.Get(answers[i].URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("page %d of %d: GET %s: %s, want %d", i+1, len(answers), answers[i].URL, resp.Status, want)
		}
	}
}

func digest(t *testing.T, w localapi.WebApproval) grant.Digest {
	t.Helper()
	d, err := grant.ParseDigest(w.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// proposeMany enrolls a as the trust store's root, starts a host and
// asks it typ (propose_ssh or approve_web) 65 times over its socket; it
// returns the socket's sender and the answers.
func proposeMany(t *testing.T, a trust.Authenticator, typ string) (func(string, any) (notify.Response, error), []localapi.WebApproval) {
	t.Helper()
	p, env := newDefaultProofProject(t)
	p.enroll(a)
	s := gConnect(t, p, env...)
	s.list()
	st := p.ready(s.run)
	send := func(typ string, v any) (notify.Response, error) { return p.sendHost(s.run, typ, v) }
	var answers []localapi.WebApproval
	for range 65 {
		resp, err := send(typ, localapi.ApproveRequest{Epoch: st.Execution.Epoch, Tools: []string{"slow_write"}, Credentials: []string{gStaging}})
		if err != nil {
			t.Fatalf("%s %d: %v", typ, len(answers), err)
		}
		w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
		answers = append(answers, w)
	}
	return send, answers
}
