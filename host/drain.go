// A restart's end of the old epoch: the drain of its calls in flight, the order of its errors, and held calls kept from an epoch about to be replaced.

package host

import (
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Drain.
//
// At a restart the old server gets no new request (the client's are held
// from identity-pending on), but its stdin stays open and what it answers
// for up to Options.Drain (host.drain, 3 s) is passed to the client as
// it is, recorded under the old epoch: a call the old server finished is
// delivered, not reported as possibly lost. Only the calls still
// unanswered when the drain ends get server_restarted, once; then the
// old server is stopped as the MCP lifecycle asks. A client initialize
// kept for the next server and a re-sent subscriptions/listen are not
// waited for: the next server answers them.
//
// The new server starts once the old one has exited (host.drain_start
// "after", the default: a server that holds a port, a lock file or a
// database cannot run twice), or at once beside it ("during").
//
// The server_restarted errors of the calls a restart ended are written
// after the notifications/tools/list_changed the restart sends (or, when
// the restart fails, with the errors of the held requests), so that a
// client that reacts to the error by listing again gets the new catalog.

// drainOld waits up to Options.Drain for the answers old owes, then
// answers what is still unanswered with server_restarted (reason, and
// next, as abortLocked takes them). It returns at once when the drain is
// zero or nothing is owed, and when old exits or the host ends.
func (h *Host) drainOld(old *child, reason string, next epoch.Epoch) {
	h.mu.Lock()
	if h.opts.Drain <= 0 || !h.owesLocked(old) {
		h.abortLocked(old, reason, next)
		h.mu.Unlock()
		return
	}
	old.drained = make(chan struct{})
	h.mu.Unlock()
	h.infof("epoch %s: waiting up to %s (host.drain) for the answers pid %d owes", old.epoch, h.opts.Drain, old.pid)
	t := time.NewTimer(h.opts.Drain)
	defer t.Stop()
	select {
	case <-old.drained:
	case <-old.done:
	case <-t.C:
	case <-h.ctx.Done():
	}
	h.mu.Lock()
	old.drained, old.drainClosed = nil, false
	h.abortLocked(old, reason, next)
	h.mu.Unlock()
}

// owedLocked reports whether cl, in flight under key k, is a request
// child c owes an answer the drain waits for: one abortLocked would end.
func (h *Host) owedLocked(c *child, k string, cl *call) bool {
	return cl.child == c && cl.method != "initialize" && !(cl.method == "subscriptions/listen" && h.listens[k] != nil)
}

// owesLocked reports whether child c owes any answer the drain waits for.
func (h *Host) owesLocked(c *child) bool {
	for k, cl := range h.inflight {
		if h.owedLocked(c, k, cl) {
			return true
		}
	}
	return false
}

// drainAnswerLocked passes the answer m (line) of child c, which is not
// the current epoch, to the client when c is draining and owes it; it
// reports whether it did.
func (h *Host) drainAnswerLocked(c *child, m *jsonrpc.Message, line []byte) bool {
	if c.drained == nil || !m.IsResponse() {
		return false
	}
	k := jsonrpc.IDKey(m.ID)
	cl := h.inflight[k]
	if cl == nil || !h.owedLocked(c, k, cl) {
		return false
	}
	delete(h.inflight, k)
	if cl.tool != "" {
		h.audit.toolResult(c.epoch, h.run, cl.tool, toolError(m.Result), strconv.FormatInt(time.Since(cl.sent).Milliseconds(), 10))
	} else if cl.recorded {
		h.requestResultLocked(c, cl, m, line)
	}
	h.toClient(line)
	h.drainCheckLocked(c)
	return true
}

// drainCheckLocked ends the drain of child c once it owes nothing.
func (h *Host) drainCheckLocked(c *child) {
	if c.drained != nil && !c.drainClosed && !h.owesLocked(c) {
		c.drainClosed = true
		close(c.drained)
	}
}

// cancelDrainingLocked passes the client's notifications/cancelled
// (line) of call cl, forgotten already, to the draining server that runs
// it, whose stdin is still open, and ends the drain when that was the
// last answer it owed.
func (h *Host) cancelDrainingLocked(cl *call, line []byte) {
	c := cl.child
	if c == nil || c == h.child || c.drained == nil {
		return
	}
	c.send(append(line[:len(line):len(line)], '\n'))
	h.drainCheckLocked(c)
}

// abortToClientLocked writes the server_restarted error line of a call a
// restart ended: held until the restart has told the client the catalog
// may have changed (releaseAbortsLocked), else at once.
func (h *Host) abortToClientLocked(line []byte) {
	if h.holdAborts {
		h.heldAborts = append(h.heldAborts, line)
		return
	}
	h.toClient(line)
}

// releaseAbortsLocked writes the errors abortToClientLocked held, in
// order, and stops holding them.
func (h *Host) releaseAbortsLocked() {
	held := h.heldAborts
	h.holdAborts, h.heldAborts = false, nil
	for _, line := range held {
		h.toClient(line)
	}
}

// deferReadyLocked reports whether child c, brought up by a restart,
// waits (in catalog-ready, or identity-pending when the client has not
// initialized) for the restart queued behind it instead of
// entering ready: the held calls are then released into the epoch that
// restart leaves running, never into one it is about to replace.
func (h *Host) deferReadyLocked(c *child, announce bool) bool {
	if h.restartsQueued == 0 {
		return false
	}
	h.readyAfter, h.readyAnnounce = c, announce || h.readyAfter != nil && h.readyAnnounce
	h.infof("epoch %s: another restart is queued: held requests wait for it", c.epoch)
	return true
}

// finishDeferredLocked brings the child a restart left waiting for the
// next one (deferReadyLocked) to ready, once no restart is queued and it
// still runs: the queued restart did not replace it (the code was the
// same, or its start failed before it stopped this one).
func (h *Host) finishDeferredLocked() {
	c := h.readyAfter
	if c == nil || h.restartsQueued > 0 {
		return
	}
	h.readyAfter = nil
	if h.child != c || h.state == StateReady {
		return // replaced, exited, or ready already
	}
	if err := h.readyLocked(c, h.readyAnnounce); err != nil {
		h.logf("epoch %s: %v", c.epoch, err)
	}
}
