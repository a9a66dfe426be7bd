package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// localAPI is the host's side of the local API: one handler per request
// type of the dispatch table (localapi.Routes), which says who may send it,
// and the proof check of the route that needs a person (approve).
func (h *Host) localAPI() *localapi.Mux {
	m := localapi.NewMux(localapi.Routes())
	m.Prove(localapi.TypeApprove, h.proveApprover)
	m.Handle(localapi.TypeBuildComplete, h.serveBuild)
	m.Handle(localapi.TypeBuildFailed, h.serveBuild)
	m.Handle(localapi.TypeRestart, h.serveRestart)
	m.Handle(localapi.TypeStatus, func(context.Context, notify.Peer, notify.Request) notify.Response {
		return localapi.WithPayload(h.response(), localapi.TypeStatus, h.Status())
	})
	m.Handle(localapi.TypeReview, h.serveReview)
	m.Handle(localapi.TypeApprove, h.serveApprove)
	m.Handle(localapi.TypeApproveWeb, h.serveApproveWeb)
	m.Handle(localapi.TypeApproveWait, h.serveApproveWait)
	m.Handle(localapi.TypeProposeSSH, func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
		a, err := localapi.DecodePayload[ApproveRequest](req.Payload)
		if err != nil {
			return h.fail(notify.CodeBadRequest, fmt.Errorf("propose_ssh payload: %v", err))
		}
		w, err := h.proposeSSH(a)
		if err != nil {
			return h.fail(localapi.CodeApprovalRefused, err)
		}
		return localapi.WithPayload(h.response(), localapi.TypeProposeSSH, w)
	})
	m.Handle(localapi.TypeApproveSSH, func(_ context.Context, peer notify.Peer, req notify.Request) notify.Response {
		a, err := localapi.DecodePayload[localapi.SSHApproveRequest](req.Payload)
		if err != nil || a.Digest == "" || a.Signature == "" {
			return h.fail(notify.CodeBadRequest, fmt.Errorf("approve_ssh payload: want {\"digest\": …, \"signature\": …}"))
		}
		g, err := h.approveSSH(peer, a)
		if err != nil {
			return h.fail(localapi.CodeApprovalRefused, err)
		}
		return localapi.WithPayload(h.response(), localapi.TypeApproveSSH, g)
	})
	m.Handle(localapi.TypeRevoke, h.serveRevoke)
	m.Handle(localapi.TypeTrees, h.serveTrees)
	m.Handle(localapi.TypeGrants, func(context.Context, notify.Peer, notify.Request) notify.Response {
		h.mu.Lock()
		live := h.grants.Live(time.Now())
		h.mu.Unlock()
		return localapi.WithPayload(h.response(), localapi.TypeGrants, live)
	})
	return m
}

// response is the start of every answer: the host's label and run id.
func (h *Host) response() notify.Response {
	return notify.Response{Label: h.opts.Label, Run: string(h.run)}
}

// fail is the error answer with code and err's text.
func (h *Host) fail(code string, err error) notify.Response {
	resp := h.response()
	resp.Type, resp.Code, resp.Error = notify.TypeError, code, err.Error()
	return resp
}

// serveApprove records a person's approval, proven as the route's proof
// check found (proveApprover), and answers with the grant.
func (h *Host) serveApprove(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
	a, err := localapi.DecodePayload[ApproveRequest](req.Payload)
	if err != nil {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("approve payload: %v", err))
	}
	pr, ok := localapi.ProvenFrom(ctx)
	if !ok {
		pr = approval.Proven{Proof: approval.ProofSameUser, Channel: approval.ChannelScript, Why: "no proof check ran"}
	}
	g, err := h.approve(peer, a, pr)
	if err != nil {
		return h.fail(localapi.CodeApprovalRefused, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeApprove, g)
}

// serveApproveWeb opens an approval page and answers with its URL.
func (h *Host) serveApproveWeb(_ context.Context, peer notify.Peer, req notify.Request) notify.Response {
	a, err := localapi.DecodePayload[ApproveRequest](req.Payload)
	if err != nil {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("approve_web payload: %v", err))
	}
	w, err := h.approveWeb(peer, a)
	if err != nil {
		return h.fail(localapi.CodeApprovalRefused, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeApproveWeb, w)
}

// serveApproveWait answers with the grant of a decided approval page, or
// CodePending after about 20 s.
func (h *Host) serveApproveWait(ctx context.Context, _ notify.Peer, req notify.Request) notify.Response {
	w, err := localapi.DecodePayload[localapi.WaitRequest](req.Payload)
	if err != nil || w.Digest == "" {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("approve_wait payload: want {\"digest\": …}"))
	}
	g, decided, err := h.waitWeb(ctx, w.Digest, 20*time.Second)
	switch {
	case !decided:
		return h.fail(localapi.CodePending, fmt.Errorf("the approval page is not decided yet"))
	case err != nil:
		return h.fail(localapi.CodeApprovalRefused, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeApproveWait, g)
}

// serveRevoke ends one grant and answers with it.
func (h *Host) serveRevoke(_ context.Context, peer notify.Peer, req notify.Request) notify.Response {
	r, err := localapi.DecodePayload[localapi.RevokeRequest](req.Payload)
	if err != nil || r.ID == "" {
		return h.fail(notify.CodeBadRequest, fmt.Errorf("revoke payload: want {\"id\": …}"))
	}
	g, err := h.revoke(peer, r.ID)
	if err != nil {
		return h.fail(localapi.CodeNotFound, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeRevoke, g)
}

// reviewPageBytes bounds the tools, and separately the catalog changes, of
// one review page: with the rest of the review, a page stays well under
// notify.MaxLine however large the catalog.
const reviewPageBytes = notify.MaxLine / 4

// serveReview answers one page of the review (localapi.Review's paging).
func (h *Host) serveReview(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
	var page localapi.ReviewRequest
	if len(req.Payload) > 0 {
		var err error
		if page, err = localapi.DecodePayload[localapi.ReviewRequest](req.Payload); err != nil || page.ToolsFrom < 0 || page.ChangesFrom < 0 {
			return h.fail(notify.CodeBadRequest, fmt.Errorf("review payload: want {\"toolsFrom\": N, \"changesFrom\": N}"))
		}
	}
	h.mu.Lock()
	r := h.reviewLocked()
	h.mu.Unlock()
	r.ToolsTotal, r.ChangesTotal = len(r.Tools), len(r.CatalogChanges)
	var next int
	r.ToolsFrom = min(page.ToolsFrom, len(r.Tools))
	r.Tools, next = pageOf(r.Tools[r.ToolsFrom:], func(t json.RawMessage) int { return len(t) })
	if next > 0 {
		r.NextTools = r.ToolsFrom + next
	}
	r.ChangesFrom = min(page.ChangesFrom, len(r.CatalogChanges))
	r.CatalogChanges, next = pageOf(r.CatalogChanges[r.ChangesFrom:], func(c grant.Change) int { return len(c.Tool) + len(c.Kind) + len(c.Detail) + 40 })
	if next > 0 {
		r.NextChanges = r.ChangesFrom + next
	}
	return localapi.WithPayload(h.response(), localapi.TypeReview, r)
}

// pageOf returns the first items of all whose sizes add up to at most
// reviewPageBytes (at least one), and, when some are left, how many it
// took; 0 when it took them all.
func pageOf[T any](all []T, size func(T) int) ([]T, int) {
	n, used := 0, 0
	for n < len(all) && (n == 0 || used+size(all[n]) <= reviewPageBytes) {
		used += size(all[n])
		n++
	}
	if n == len(all) {
		return all, 0
	}
	return all[:n], n
}
