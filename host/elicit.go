package host

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Approval through the MCP client (MCP 2025-11-25 elicitation; MCP
// 2026-07-28 input_required). A tools/call that needs a grant, from a
// client that declared elicitation, is held instead of refused: the host
// opens the approval page (presence.go) for the grant the call needs, or
// for the prepared renewal that covers it (renewalForLocked), and asks the
// person through the client, in the mode approval.AskMode decides and
// with a form accept proving what approval.Launch.Client decides (the
// client channel's rules, approval/client.go):
//
//   - url mode (client capability elicitation.url): elicitation/create
//     with mode "url", the page's URL, an elicitationId and a message
//     naming the server, the epoch, the short code and what changed;
//   - form mode (elicitation without url, or with both while no
//     authenticator is enrolled and the proof list counts "client", as the
//     page could then only say that none is): a form with the same message;
//     its accept is an approval of proof level "client" only where the
//     project's proof list counts it (approval.Proofs.Counts), otherwise the
//     form says where to approve and its accept only keeps the call
//     waiting;
//   - in the 2026-07-28 era there is no server→client request: the call
//     is answered with an input_required result whose inputRequests holds
//     that elicitation/create under the elicitationId, and requestState
//     names it; the client's retry, carrying the answer in
//     inputResponses, is what is held.
//
// The grant, from whatever channel (the page, mcpepoch approve, a form
// accept that counts), releases every held call it covers under the lock
// that made it (releaseHeldLocked), and the client gets
// notifications/elicitation/complete. A decline or cancel of the client,
// a decline on the page, the end of grants.approval_wait, or an epoch
// change answers the held calls with authorization_required: a call held
// on one epoch is never forwarded to another (a grant ends with its
// epoch). A notifications/cancelled of the client for a held call ends its
// wait without an answer. Calls that need the same approval (epoch, tool,
// credential scopes) share one ask. Other requests pass meanwhile. A held
// call that carries a progressToken gets notifications/progress while it
// waits (heldprogress.go).

// ask is one approval asked through the client, shared by the calls that
// wait for it. Guarded by h.mu.
type ask struct {
	id      string // the elicitationId, and the requestState of input_required
	epoch   epoch.Epoch
	tool    string
	creds   []string
	req     ApproveRequest // what the page proposes
	mode    string         // approval.ModeURL or ModeForm (approval.AskMode)
	mrtr    bool           // asked through input_required (MCP 2026-07-28)
	counts  bool           // a form accept counts as an approval (proof "client")
	hid     json.RawMessage
	waiters []*waiter
	answers chan elicitAnswer // the client's answers, buffered
	ended   chan struct{}     // closed by endAskLocked
	outcome string            // why it ended
	page    *webApproval      // once opened
	cr      ceremony.Request
	asked   time.Time
	begun   time.Time     // when the call that opened the ask was held
	wait    time.Duration // grants.approval_wait when it was held
	// answered: the client answered the elicitation/create request, so
	// it needs no notifications/cancelled.
	answered bool
}

// waiter is a call held for an ask.
type waiter struct {
	m     *jsonrpc.Message
	line  []byte
	since time.Time
	retry bool // a retry after input_required: it waits; the first call was answered
	// token is the call's params._meta.progressToken, nil when it has
	// none; sent is the last progress sent for it (heldprogress.go).
	token json.RawMessage
	sent  float64
}

// newWaiter is the waiter of call m, arriving now.
func newWaiter(m *jsonrpc.Message, line []byte, retry bool) *waiter {
	return &waiter{m: m, line: line, since: time.Now(), retry: retry, token: progressToken(m.Params)}
}

// elicitAnswer is the client's answer to an elicitation: its ElicitResult,
// or an error.
type elicitAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
	err     string
}

// Outcomes of an ask (approval_wait_ended's outcome).
const (
	askGranted       = "granted"
	askDeclined      = "declined"
	askCancelled     = "cancelled"
	askTimeout       = "timeout"
	askEpochChanged  = "epoch_changed"
	askCallCancelled = "call_cancelled"
	askFailed        = "failed"
)

// holdLocked holds a tools/call that needs a grant no live grant gives,
// when the client can be asked (elicitModesLocked) and grants.approval_wait
// is not zero, and reports whether it did. h.mu is held and the state is
// ready.
func (h *Host) holdLocked(m *jsonrpc.Message, line []byte, p *callParams, rt *retry) bool {
	wait := h.policy.ApprovalWait()
	t, known := h.tools[p.Name]
	if wait <= 0 || h.catalog == nil || !known || h.child.drift != nil {
		return false // a drifted epoch cannot be approved: refused at once (identity.go)
	}
	ep := h.child.epoch
	d := h.grants.Check(h.policy, p.Name, string(t.digest), ep, time.Now())
	if d.Refusal == "" {
		return false // covered: the common case costs one grant check
	}
	form, url := h.elicitModesLocked()
	if !form && !url {
		return false
	}
	if rt != nil {
		if i := slices.IndexFunc(h.asks, func(a *ask) bool { return a.id == rt.state && a.tool == p.Name }); i >= 0 {
			a := h.asks[i]
			a.waiters = append(a.waiters, newWaiter(m, line, true))
			h.heldProgressLocked(a)
			if !a.answered {
				a.answered = true
				a.answers <- rt.answer
			}
			return true
		}
	}
	h.notePendingLocked(p.Name, d, ep)
	w := newWaiter(m, line, false)
	for _, a := range h.asks {
		if a.epoch == ep && a.tool == p.Name && slices.Equal(a.creds, d.Credentials) {
			a.waiters = append(a.waiters, w)
			if a.mrtr && a.page != nil {
				h.inputRequiredLocked(a)
			}
			h.heldProgressLocked(a)
			return true
		}
	}
	h.nextPrivate++
	a := &ask{id: fmt.Sprintf("%se%d", privatePrefix, h.nextPrivate), epoch: ep, tool: p.Name, creds: d.Credentials,
		mrtr: h.stateless, waiters: []*waiter{w}, answers: make(chan elicitAnswer, 2), ended: make(chan struct{}),
		begun: w.since, wait: wait}
	a.mode, a.counts = approval.AskMode(form, url, h.policy.Proof(d.Credentials, h.enrolled), h.enrolled)
	a.req = ApproveRequest{Epoch: ep, Tools: []string{p.Name}, Credentials: d.Credentials}
	if d.PerCall {
		a.req.Expires = grant.ExpiresPerCall
	}
	if r, ok := h.renewalForLocked(ep, p.Name); ok {
		a.req = r
	}
	h.asks = append(h.asks, a)
	go h.runAsk(a, wait)
	return true
}

// runAsk opens the page of a, asks the client, and waits until the ask
// ends: granted (the grant released its calls), answered no, timed out,
// or ended by an epoch change or the client's cancellation.
func (h *Host) runAsk(a *ask, wait time.Duration) {
	open := h.openPage
	if a.mode == approval.ModeForm && a.counts {
		open = h.proposeOnly // the form's accept approves: no page
	}
	wa, cr, err := open(notify.Peer{}, a.req)
	h.mu.Lock()
	if err == nil && !isDone(a.ended) {
		a.page, a.cr, a.asked = wa, cr, time.Now()
		h.sendAskLocked(a)
		h.heldProgressLocked(a)
	} else if err != nil {
		h.logf("epoch %s: cannot ask the client to approve %s: %v", a.epoch, a.tool, err)
		h.endAskLocked(a, askFailed, err.Error())
	}
	h.mu.Unlock()
	if wa == nil {
		return
	}
	defer h.dropPage(wa)
	timer := time.NewTimer(wait - time.Since(a.begun))
	defer timer.Stop()
	tick := time.NewTicker(heldProgressEvery(wait))
	defer tick.Stop()
	decided := wa.done
	for {
		select {
		case <-tick.C:
			h.mu.Lock()
			h.heldProgressLocked(a)
			h.mu.Unlock()
		case <-a.ended:
			h.finishAsk(a)
			return
		case <-decided:
			decided = nil
			h.pageDecided(a, wa)
		case ans := <-a.answers:
			h.clientAnswered(a, ans)
		case <-timer.C:
			h.mu.Lock()
			h.endAskLocked(a, askTimeout, "nobody approved within grants.approval_wait ("+wait.String()+")")
			h.mu.Unlock()
		case <-h.ctx.Done():
			return
		}
	}
}

// pageDecided handles the end of a's page. A grant has already released
// the calls it covers (grantFor), or will once the server runs again with
// a deliver = "env" variable it names; calls it could not cover (a
// per-call grant is used by one call) are asked for again.
func (h *Host) pageDecided(a *ask, wa *webApproval) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if isDone(a.ended) {
		return
	}
	if wa.err != nil || wa.g == nil {
		why := "the approval page ended without a grant"
		if wa.err != nil {
			why = wa.err.Error()
		}
		h.endAskLocked(a, askDeclined, why)
		return
	}
	if h.envRelaunchDueLocked(wa.g) {
		// The calls go to the process started with the credential's
		// variable once it is ready (relaunchWithEnv releases them), as
		// with an approval from the terminal; not to the one it replaces.
		return
	}
	left := a.waiters
	a.waiters = nil
	h.endAskLocked(a, askGranted, "")
	for _, w := range left {
		h.forwardLocked(w.m, w.line)
	}
}

// clientAnswered handles the client's answer to a's elicitation.
func (h *Host) clientAnswered(a *ask, ans elicitAnswer) {
	h.mu.Lock()
	client := h.clientNameLocked()
	fields := map[string]any{"elicitation_id": a.id, "action": ans.Action, "client": client, "channel": a.channel()}
	if ans.err != "" {
		fields["error"] = ans.err
	}
	h.audit.event(audit.TypeApprovalAnswered, a.epoch, h.run, fields)
	switch {
	case ans.err != "":
		h.endAskLocked(a, askFailed, "the MCP client answered the approval request with an error: "+ans.err)
	case ans.Action == "decline":
		h.endAskLocked(a, askDeclined, "the person declined in the MCP client")
	case ans.Action != "accept":
		h.endAskLocked(a, askCancelled, "the approval request was dismissed in the MCP client")
	case a.mode == approval.ModeForm && a.counts && ans.Content["approve"] == true:
		h.mu.Unlock()
		pr := proven{Proven: h.clients.Client(client)}
		req := a.page.req
		if _, err := h.grantFor(notify.Peer{}, req, pr); err != nil {
			h.mu.Lock()
			h.endAskLocked(a, askFailed, err.Error())
			h.mu.Unlock()
		}
		return
	case a.mode == approval.ModeForm && a.counts:
		h.endAskLocked(a, askDeclined, "the person did not approve in the MCP client")
	}
	h.mu.Unlock()
}

// finishAsk tells the client the ask is over: notifications/elicitation/
// complete for a url elicitation that ended with a grant or a decline,
// notifications/cancelled for an elicitation/create it never answered.
func (h *Host) finishAsk(a *ask) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a.hid != nil && !a.answered {
		h.toClient(jsonrpc.RequestLine(nil, "notifications/cancelled", map[string]any{
			"requestId": a.hid, "reason": "approval request ended: " + a.outcome}))
	}
	delete(h.elicits, jsonrpc.IDKey(a.hid))
	if a.mode == approval.ModeURL && a.hid != nil && (a.outcome == askGranted || a.outcome == askDeclined) {
		h.toClient(jsonrpc.RequestLine(nil, "notifications/elicitation/complete", map[string]any{"elicitationId": a.id}))
	}
}

// endAskLocked ends a with outcome: its calls still held are refused with
// authorization_required (why says what happened) and the ask is audited.
func (h *Host) endAskLocked(a *ask, outcome, why string) {
	if isDone(a.ended) {
		return
	}
	a.outcome = outcome
	close(a.ended)
	h.asks = slices.DeleteFunc(h.asks, func(x *ask) bool { return x == a })
	for _, w := range a.waiters {
		h.toClient(h.heldRefusalLocked(a, w, why))
	}
	h.audit.event(audit.TypeApprovalWaitEnded, a.epoch, h.run, map[string]any{
		"elicitation_id": a.id, "outcome": outcome, "reason": why, audit.FieldTool: a.tool,
		"refused_calls": strconv.Itoa(len(a.waiters)), "channel": a.channel()})
	a.waiters = nil
}

// heldRefusalLocked is the authorization_required answer of a call held
// for a, which ended without covering it.
func (h *Host) heldRefusalLocked(a *ask, w *waiter, why string) []byte {
	action := approval.HowToApprove(h.policy.Proof(a.creds, h.enrolled))
	h.audit.event(audit.TypeAuthorizationDenied, a.epoch, h.run, map[string]any{
		"reason": "approval_" + a.outcome, audit.FieldTool: a.tool, "current_epoch": string(a.epoch), "elicitation_id": a.id})
	return jsonrpc.ErrorLine(w.m.ID, CodeAuthorizationRequired,
		fmt.Sprintf("authorization_required: %s (tool %s, execution epoch %s); the call was held %s and not forwarded: %s",
			why, a.tool, a.epoch, time.Since(w.since).Round(time.Millisecond), action),
		map[string]any{"error": grant.AuthorizationRequired, "tool": a.tool, "currentEpoch": a.epoch,
			"credentialScope": a.creds, "reason": why, "action": action,
			"approval": map[string]any{"elicitationId": a.id, "outcome": a.outcome, "channel": a.channel()}})
}

// releaseHeldLocked forwards every held call a live grant now covers, in
// the order they arrived; an ask left without calls ends as granted. Called
// under h.mu by grantFor, so the call reaches the server with the grant.
func (h *Host) releaseHeldLocked() {
	for _, a := range slices.Clone(h.asks) {
		if h.child == nil || a.epoch != h.child.epoch {
			continue
		}
		var left []*waiter
		released := 0
		for _, w := range a.waiters {
			var p callParams
			json.Unmarshal(w.m.Params, &p)
			t := h.tools[p.Name]
			if t != nil && h.grants.Check(h.policy, p.Name, string(t.digest), a.epoch, time.Now()).Refusal == "" {
				h.forwardLocked(w.m, w.line)
				released++
				continue
			}
			left = append(left, w)
		}
		if released > 0 {
			h.logf("epoch %s: released %d held call(s) of %s", a.epoch, released, a.tool)
		}
		a.waiters = left
		if len(left) == 0 && (!a.mrtr || a.answered) {
			h.endAskLocked(a, askGranted, "")
		}
	}
}

// endAsksOfEpochLocked ends the asks of ep, which ended: their calls are
// refused, never forwarded to the next epoch.
func (h *Host) endAsksOfEpochLocked(ep epoch.Epoch) {
	for _, a := range slices.Clone(h.asks) {
		if a.epoch == ep {
			h.endAskLocked(a, askEpochChanged, "the server's execution epoch changed while the call waited for approval; approvals end with their epoch")
		}
	}
}

// cancelHeldLocked ends the wait of a held call the client cancelled
// (notifications/cancelled): no answer is sent (MCP cancellation). An ask
// left without calls ends. It reports whether key named a held call.
func (h *Host) cancelHeldLocked(key string) bool {
	for _, a := range h.asks {
		for i, w := range a.waiters {
			if jsonrpc.IDKey(w.m.ID) != key {
				continue
			}
			a.waiters = slices.Delete(a.waiters, i, i+1)
			h.audit.event(audit.TypeCallAborted, a.epoch, h.run, map[string]any{audit.FieldTool: a.tool,
				"reason": "cancelled by the client while waiting for approval", "elicitation_id": a.id})
			if len(a.waiters) == 0 {
				h.endAskLocked(a, askCallCancelled, "the client cancelled the call")
			}
			return true
		}
	}
	return false
}

func (a *ask) channel() string {
	if a.mrtr {
		return "input_required/" + a.mode
	}
	return "elicitation/" + a.mode
}

// dropPage takes down the page of an ended ask, unless another screen
// (mcpepoch approve --web, a renewal offered elsewhere) shows the same
// proposal: that person's page stays until decided.
func (h *Host) dropPage(wa *webApproval) {
	h.pres.mu.Lock()
	shared := wa.shared
	h.pres.mu.Unlock()
	if !shared && wa.page != nil {
		wa.page.Cancel()
	}
}
