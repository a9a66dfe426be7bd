package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// What elicit.go says to the client, and reads back.

// elicitModesLocked reports which elicitation modes the client declared:
// in the 2026-07-28 era in the _meta of its latest request
// (io.modelcontextprotocol/clientCapabilities), else in its initialize
// params. An elicitation capability naming neither mode is form mode
// (MCP 2025-11-25, client capabilities: backwards compatibility).
func (h *Host) elicitModesLocked() (form, url bool) {
	var caps struct {
		Elicitation *struct {
			Form *json.RawMessage `json:"form"`
			URL  *json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	if h.stateless {
		var meta map[string]json.RawMessage
		json.Unmarshal(h.meta, &meta)
		json.Unmarshal(meta[metaClientCapabilities], &caps)
	} else {
		var p struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		json.Unmarshal(h.initParams, &p)
		json.Unmarshal(p.Capabilities, &caps)
	}
	e := caps.Elicitation
	if e == nil {
		return false, false
	}
	if e.Form == nil && e.URL == nil {
		return true, false
	}
	return e.Form != nil, e.URL != nil
}

// clientName names the MCP client from its clientInfo ("name version"),
// "the MCP client" when it sent none. h.mu is held.
func (h *Host) clientNameLocked() string {
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if h.stateless {
		var meta map[string]json.RawMessage
		json.Unmarshal(h.meta, &meta)
		json.Unmarshal(meta[metaClientInfo], &info)
	} else {
		var p struct {
			ClientInfo json.RawMessage `json:"clientInfo"`
		}
		json.Unmarshal(h.initParams, &p)
		json.Unmarshal(p.ClientInfo, &info)
	}
	if info.Name == "" {
		return "the MCP client"
	}
	return strings.TrimSpace(info.Name + " " + info.Version)
}

// retry is what a tools/call retried after input_required carries
// (MCP 2026-07-28): the requestState the host gave and the client's answer
// to the input request of that id.
type retry struct {
	state  string
	answer elicitAnswer
}

// parseRetry returns the retry params carries when its requestState is one
// of the host's (an ask id); nil otherwise.
func parseRetry(params json.RawMessage) *retry {
	if !bytes.Contains(params, []byte(`"requestState"`)) {
		return nil // not a retry: no decoding on the common path
	}
	var p struct {
		RequestState   string                     `json:"requestState"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if json.Unmarshal(params, &p) != nil || !strings.HasPrefix(p.RequestState, privatePrefix+"e") {
		return nil
	}
	r := &retry{state: p.RequestState}
	raw, ok := p.InputResponses[p.RequestState]
	if !ok || json.Unmarshal(raw, &r.answer) != nil {
		r.answer.err = "no answer to input request " + p.RequestState
	}
	return r
}

// stripRetry removes requestState and inputResponses, which are the
// host's, from a retried tools/call before the server sees it. The other
// members of params keep their bytes; their order may change.
func stripRetry(line []byte) ([]byte, error) {
	raw, _ := jsonrpc.GetMember(line, "params")
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, err
	}
	delete(params, "requestState")
	delete(params, "inputResponses")
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return jsonrpc.SetMember(line, b, "params")
}

// sendAskLocked asks the client: elicitation/create, or in the 2026-07-28
// era input_required answers to the calls waiting; approval_asked records
// whom, through which channel, for what.
func (h *Host) sendAskLocked(a *ask) {
	h.audit.event(audit.TypeApprovalAsked, a.epoch, h.run, map[string]any{
		"elicitation_id": a.id, "channel": a.channel(), "asked": "the person at " + h.clientNameLocked(),
		audit.FieldTool: a.tool, "tool_scope": a.page.req.Tools, "credential_scope": listField(a.page.req.Credentials),
		"short_code": a.cr.Digest.ShortCode(), "signed_digest": a.cr.Digest.String(),
		"client_accept_counts": fmt.Sprint(a.mode == approval.ModeForm && a.counts), "calls": fmt.Sprint(len(a.waiters))})
	if a.mrtr {
		h.inputRequiredLocked(a)
		return
	}
	h.nextPrivate++
	a.hid, _ = json.Marshal(fmt.Sprintf("%s:r%d", a.id, h.nextPrivate))
	h.elicits[jsonrpc.IDKey(a.hid)] = a
	h.toClient(jsonrpc.RequestLine(a.hid, "elicitation/create", h.elicitParamsLocked(a)))
}

// inputRequiredLocked answers the calls waiting for a that are not retries
// with an input_required result (MCP 2026-07-28) holding a's elicitation
// under its id, and requestState naming it; they wait no more (the
// client's retry will).
func (h *Host) inputRequiredLocked(a *ask) {
	var left []*waiter
	for _, w := range a.waiters {
		if w.retry {
			left = append(left, w)
			continue
		}
		h.toClient(jsonrpc.ResultLine(w.m.ID, map[string]any{
			"resultType":    "input_required",
			"inputRequests": map[string]any{a.id: map[string]any{"method": "elicitation/create", "params": h.elicitParamsLocked(a)}},
			"requestState":  a.id,
		}))
	}
	a.waiters = left
}

// elicitParamsLocked is the params of a's elicitation/create.
func (h *Host) elicitParamsLocked(a *ask) map[string]any {
	p := a.page.req
	what := fmt.Sprintf("mcpepoch: a call to %s of server %q needs a person's approval of %s on execution epoch %s (code %s). %s",
		a.tool, h.opts.Label, strings.Join(p.Tools, ", "), a.epoch, a.cr.Digest.ShortCode(), changeSummary(a, h.approved == nil))
	if p.Renewal != "" {
		what += " It renews what the rebuild ended, the same tools and credential scopes on the new code."
	}
	if a.mode == approval.ModeURL {
		return map[string]any{"mode": "url", "elicitationId": a.id, "url": a.page.page.URL(),
			"message": what + " Open the page, check the code, and approve there with your authenticator."}
	}
	if a.counts {
		return map[string]any{"message": what + " Set approve to grant it for " + expiresText(p.Expires) + ".",
			"requestedSchema": map[string]any{"type": "object", "required": []string{"approve"},
				"properties": map[string]any{"approve": map[string]any{"type": "boolean", "title": "Approve",
					"description": "approve " + strings.Join(p.Tools, ", ") + " (code " + a.cr.Digest.ShortCode() + ")"}}}}
	}
	return map[string]any{"message": what + " This form cannot approve it: this project counts only " +
		h.policy.Proof(a.creds, h.enrolled).String() + " as a person's approval. Approve at " + a.page.page.URL() +
		" (code " + a.cr.Digest.ShortCode() + "); accept to keep the call waiting, decline to give up.",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}
}

func expiresText(e string) string {
	switch e {
	case "", "run-ends":
		return "this agent run, on this epoch"
	case "per-call":
		return "one call"
	}
	return e + ", on this epoch"
}

// changeSummary says in one sentence what changed since the last approval:
// the identity lines and the tools of the catalog diff. first: there was
// no approval in this run, so nothing to compare with (the diff against
// nothing would call every tool added).
func changeSummary(a *ask, first bool) string {
	if first {
		return "This is the run's first approval: nothing earlier to compare with."
	}
	var parts []string
	for _, l := range a.cr.Identity {
		if l.Was != "" {
			parts = append(parts, l.Name+" changed")
		}
	}
	for _, c := range a.cr.Catalog {
		if c.Change != "" && c.Change != "unchanged" {
			parts = append(parts, "tool "+c.Tool+" "+c.Change)
		}
	}
	switch {
	case len(parts) == 0:
		return "Nothing changed since the last approval in this run, or there was none."
	case len(parts) > 6:
		parts = append(parts[:6], fmt.Sprintf("%d more", len(parts)-6))
	}
	return "What changed: " + strings.Join(parts, "; ") + "."
}

// answerElicitLocked takes the client's answer to an elicitation/create
// the host sent, and reports whether m was one.
func (h *Host) answerElicitLocked(m *jsonrpc.Message, line []byte) bool {
	a, ok := h.elicits[jsonrpc.IDKey(m.ID)]
	if !ok {
		return false
	}
	delete(h.elicits, jsonrpc.IDKey(m.ID))
	var resp struct {
		Result *elicitAnswer  `json:"result"`
		Error  *jsonrpc.Error `json:"error"`
	}
	ans := elicitAnswer{err: "an answer that is neither a result nor an error"}
	if json.Unmarshal(line, &resp) == nil {
		switch {
		case resp.Error != nil:
			ans = elicitAnswer{err: fmt.Sprintf("error %d: %s", resp.Error.Code, resp.Error.Message)}
		case resp.Result != nil:
			ans = *resp.Result
		}
	}
	if !a.answered && !isDone(a.ended) {
		a.answered = true
		a.answers <- ans
	}
	return true
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stripRetryLocked is m and line without the host's requestState and
// inputResponses (stripRetry); a line that cannot be rewritten is refused
// (nil).
func (h *Host) stripRetryLocked(m *jsonrpc.Message, line []byte) (*jsonrpc.Message, []byte) {
	out, err := stripRetry(line)
	var nm *jsonrpc.Message
	if err == nil {
		nm, err = jsonrpc.ParseClient(out)
	}
	if err != nil {
		h.toClient(jsonrpc.ErrorLine(m.ID, jsonrpc.CodeInvalidParams, "invalid params: a retried tools/call whose params cannot be rewritten: "+err.Error()+"; it was not forwarded: call again without inputResponses and requestState", nil))
		return nil, nil
	}
	return nm, out
}
