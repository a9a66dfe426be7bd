package host

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Progress of a call held for an approval (MCP 2025-06-18 and later,
// basic/utilities/progress). A client that sent a tools/call with
// params._meta.progressToken gets notifications/progress for it while the
// call waits for a person: one as soon as the person is asked, then one
// every heldProgressEvery, until the call is released, refused or
// cancelled (all under h.mu, so none follows the call's answer). progress
// is the seconds the approval has been waited for and total the seconds
// grants.approval_wait allows, so progress only grows and reaches total
// when the wait ends; message says what the call waits for and what a
// person does (approval.HowToApprove).
//
// Why: a client's request timeout can be shorter than approval_wait (the
// TypeScript SDK's is 60 s). A client that restarts that timeout on
// progress (the SDK's resetTimeoutOnProgress) then keeps the call; one that
// does not still shows the person why the call is slow. docs/approval.md
// lists the timeouts of real clients.

// heldProgressEvery is how often a held call's progress is sent: an
// eighth of the wait, between 1 and 10 seconds (6.25 s for the default
// 50 s), so that a client whose timeout restarts on progress never times
// out for want of one unless its timeout is a few seconds.
func heldProgressEvery(wait time.Duration) time.Duration {
	return min(max(wait/8, time.Second), 10*time.Second)
}

// progressToken returns params._meta.progressToken of a request (a string
// or a number, as the client sent it), or nil when it has none.
func progressToken(params json.RawMessage) json.RawMessage {
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.Token) == 0 || p.Meta.Token[0] == 'n' {
		return nil
	}
	return p.Meta.Token
}

// heldProgressLocked sends notifications/progress to every call held for a
// that carries a progressToken.
func (h *Host) heldProgressLocked(a *ask) {
	if a.page == nil {
		return // not asked yet: the first progress follows the ask
	}
	waited := time.Since(a.begun)
	msg := fmt.Sprintf("mcpepoch: the call to %s waits for a person's approval (execution epoch %s, code %s), %s of grants.approval_wait left: %s",
		a.tool, a.epoch, a.cr.Digest.ShortCode(), max(a.wait-waited, 0).Round(time.Second), approval.HowToApprove(h.policy.Proof(a.creds, h.enrolled)))
	total := a.wait.Seconds()
	for _, w := range a.waiters {
		if w.token == nil {
			continue
		}
		// Progress must grow with each notification of a token.
		v := math.Round(waited.Seconds()*1000) / 1000
		if v <= w.sent {
			v = w.sent + 0.001
		}
		w.sent = v
		h.toClient(jsonrpc.RequestLine(nil, "notifications/progress", map[string]any{
			"progressToken": w.token, "progress": v, "total": total, "message": msg}))
	}
}
