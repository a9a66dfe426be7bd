package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/trust"
)

// acceptOnPage proves a person for the weakenings weak with the touch of
// an enrolled WebAuthn authenticator (proof presence) on a page this
// command serves on the loopback interface: it prints the page's URL on
// stdout, opens it unless noOpen, and waits until it is decided. The page
// shows each weakening old → new and the change code of d, the challenge
// it signs. The assertion is kept in the floor (trust.Acceptance's
// webauthn), where a host verifies it again against the trust store it
// pinned before it takes the floor: what serves the page adds no trust.
func acceptOnPage(ctx context.Context, st *policyState, d grant.Digest, weak []trust.Difference, noOpen bool, stdio Stdio) (acceptProof, error) {
	if len(st.store.Kind(trust.KindWebAuthn)) == 0 {
		return acceptProof{}, notAccepted("--web needs an enrolled WebAuthn authenticator, and none is (" + selfcmd.Name() + " enroll --web enrolls one)")
	}
	srv, err := ceremony.Listen(ceremony.Config{TrustDir: st.store.Dir()})
	if err != nil {
		return acceptProof{}, err
	}
	defer func() {
		// The page's last answer is written after the decision is
		// delivered here: give it a moment before the server closes.
		time.Sleep(500 * time.Millisecond)
		srv.Close()
	}()
	req := ceremony.PolicyRequest{Digest: d, Project: st.root}
	for _, w := range weak {
		req.Changes = append(req.Changes, ceremony.PolicyLine{Setting: w.Setting, From: w.Floor, To: w.File})
	}
	page, err := srv.AcceptPolicy(req)
	if err != nil {
		return acceptProof{}, err
	}
	fmt.Fprintln(stdio.Out, page.URL())
	fmt.Fprintf(stdio.Err, "accept on the page with an enrolled authenticator (button Accept), change code %s\n", d.ShortCode())
	if !noOpen {
		openBrowser(page.URL())
	}
	select {
	case dec := <-page.Decided():
		if dec.Outcome != ceremony.Approved {
			return acceptProof{}, notAccepted("the page ended %s", dec.Outcome)
		}
		if err := acceptAttested(st, dec.AuthenticatorID); err != nil {
			page.Settle(err)
			return acceptProof{}, err
		}
		page.Settle(nil)
		return acceptProof{Proven: approval.Proven{Proof: approval.ProofPresence, Channel: approval.ChannelWeb,
			Authenticator: dec.AuthenticatorID, SignCount: dec.SignCount}, assertion: dec.Assertion}, nil
	case <-ctx.Done():
		page.Cancel()
		return acceptProof{}, ctx.Err()
	}
}

// countTrue counts the true values of bs.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
