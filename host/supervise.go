package host

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// start launches the server under a new epoch with identity id (computed by
// the caller just before) and starts reading its stdout. It does not make
// the child current.
func (h *Host) start(id *build.Identity, ep epoch.Epoch) (*child, error) {
	c, err := startChild(h.opts.Command, h.opts.Dir, h.opts.Stderr, ep, id)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	go c.run(h.opts.MaxLine, func(line []byte, over *overflow) { h.fromChild(c, line, over) }, func() { h.childExited(c) })
	h.logf("epoch %s: started pid %d: %v (entry %s %s)", ep, c.pid, h.opts.Command, id.Entry.Path, id.Entry.Digest.Short())
	h.writeRecord(c)
	rec := h.record(c)
	fields := map[string]any{"pid": strconv.Itoa(c.pid), audit.FieldEntry: string(rec.EntryDigest),
		"runtime": rec.Runtime, "runtime_digest": string(rec.RuntimeDigest), "dir": rec.WorkingDirectory,
		"command": rec.LaunchCommand, "label": rec.ServerLabel}
	if rec.LockfileDigest != "" {
		fields["lockfile"] = string(rec.LockfileDigest)
	}
	h.audit.event(audit.TypeServerStarted, ep, h.run, fields)
	return c, nil
}

// ExecutionRecord is the host's record of the running epoch, kept in
// .mcpepoch/hosts/<agent run>.json while the host lives.
type ExecutionRecord = localapi.ExecutionRecord

func (h *Host) record(c *child) ExecutionRecord {
	rt := c.identity.Runtime.Path
	if v := c.identity.Runtime.Version; v != "" {
		rt = filepath.Base(rt) + " " + v
	}
	return ExecutionRecord{
		V: 1, ServerLabel: h.opts.Label, LaunchCommand: h.opts.Command,
		EntryDigest: c.identity.Entry.Digest, LockfileDigest: c.identity.LockfileDigest(),
		Runtime: rt, RuntimeDigest: c.identity.Runtime.Digest,
		WorkingDirectory: h.opts.Dir, Epoch: c.epoch, ProcessID: c.pid,
		StartedAt: c.started.UTC(), AgentRun: h.run,
	}
}

func (h *Host) recordPath() string { return layout.HostRecord(h.opts.Dir, h.run) }

func (h *Host) writeRecord(c *child) {
	p := h.recordPath()
	b, _ := json.MarshalIndent(h.record(c), "", "  ")
	err := layout.MkdirAll(filepath.Dir(p))
	if err == nil {
		err = atomicfile.Write(p, append(b, '\n'), 0o600)
	}
	if err != nil {
		h.logf("execution record: %v", err)
	}
}

// childExited runs when c's process has been reaped.
func (h *Host) childExited(c *child) {
	h.mu.Lock()
	if c != h.child {
		h.mu.Unlock()
		return // stopped by a restart or shutdown: what it owed was answered then
	}
	h.child = nil
	h.ended = c
	go c.endGroup(h.opts.Grace) // what the server left in its group runs no epoch
	status := c.exitStatus()
	h.logf("epoch %s: server pid %d exited on its own (%s)", c.epoch, c.pid, status)
	h.abortLocked(c, "server_exited", "")
	h.cancelServerRequestsLocked(c)
	// The epoch is over: its grants end with it, as on a rebuild, so that
	// the next call is refused as stale and names the right epoch.
	h.endedRevoked = h.revokeEpochLocked(c.epoch)
	if h.endedRevoked > 0 {
		h.logf("epoch %s: %d grant(s) revoked with the epoch", c.epoch, h.endedRevoked)
	}
	if h.state != StateReady {
		// A restart is bringing c up; it fails with this exit (failStart
		// or readyLocked) and decides what follows: crash recovery counts
		// the exit and tries again, a build signal reports it. Starting a
		// second recovery here would race the first one past MaxCrashes.
		h.goDownLocked("the server exited (" + status + ") while starting")
		h.mu.Unlock()
		return
	}
	quick := time.Since(c.started) < h.opts.QuickCrash
	if quick {
		h.crashes++
	} else {
		h.crashes = 1
	}
	n := h.crashes
	if n > h.opts.MaxCrashes {
		h.goDownLocked(fmt.Sprintf("the server exited %d times in a row within %s of starting (last: %s); not restarting it again until a build signal or mcpepoch restart", n, h.opts.QuickCrash, status))
		h.logf("%s", h.downReason)
		h.mu.Unlock()
		return
	}
	h.goDownLocked("the server exited (" + status + "); restarting it")
	h.mu.Unlock()
	go h.recover(n)
}

// recover restarts the server after it exited on its own, with backoff;
// a start that fails counts as one more quick exit, so the host keeps
// trying (a binary briefly missing mid-build) until MaxCrashes, never
// spinning.
func (h *Host) recover(n int) {
	for {
		delay := time.Duration(100<<min(n-1, 6)) * time.Millisecond // 100 ms, 200 ms, … 6.4 s
		select {
		case <-time.After(delay):
		case <-h.ctx.Done():
			return
		}
		_, err := h.restart(h.ctx, "crash recovery", restartCrash)
		if err == nil || h.ctx.Err() != nil {
			return
		}
		h.logf("crash recovery: %v", err)
		h.mu.Lock()
		if h.child != nil { // a build signal started one meanwhile
			h.mu.Unlock()
			return
		}
		h.crashes++
		n = h.crashes
		if n > h.opts.MaxCrashes {
			h.goDownLocked(fmt.Sprintf("the server could not be restarted %d times in a row (last: %v); not trying again until a build signal or mcpepoch restart", n, err))
			h.logf("%s", h.downReason)
			h.mu.Unlock()
			return
		}
		h.goDownLocked(fmt.Sprintf("the server could not be restarted (%v); trying again", err))
		h.mu.Unlock()
	}
}

// abortLocked answers every request in flight at child c with one error and
// forgets it: it is never retried (seed: "do not automatically repeat a
// write in the new process"; a timeout is not proof it did not run).
// subscriptions/listen requests are kept for re-sending when next is set.
func (h *Host) abortLocked(c *child, reason string, next epoch.Epoch) {
	for k, cl := range h.inflight {
		if cl.child != c {
			continue
		}
		if cl.method == "initialize" && next != "" {
			continue // kept: the next child answers it, the session has not begun
		}
		delete(h.inflight, k)
		if cl.method == "subscriptions/listen" && h.listens[k] != nil {
			continue // re-sent to the next child under the same id
		}
		data := map[string]any{
			"reason":        reason,
			"method":        cl.method,
			"requestId":     cl.id,
			"previousEpoch": c.epoch,
			"retry":         "not retried: it may or may not have taken effect; check the server's state, refresh tools/list, then decide whether to call again",
		}
		var msg string
		if reason == "server_exited" {
			data["exitStatus"] = c.exitStatus()
			msg = "server_restarted: the server exited (" + c.exitStatus() + ") while this request was in flight; it was not retried and may or may not have taken effect"
		} else {
			data["currentEpoch"] = next
			msg = "server_restarted: execution epoch changed while this request was in flight; it was not retried and may or may not have taken effect"
		}
		h.toClient(jsonrpc.ErrorLine(cl.id, CodeServerRestarted, msg, data))
		fields := map[string]any{"reason": reason, "method": cl.method, "request_id": string(cl.id)}
		if cl.tool != "" {
			fields[audit.FieldTool] = cl.tool
		}
		h.audit.event(audit.TypeCallAborted, c.epoch, h.run, fields)
	}
}

// goDownLocked records that no child runs and answers held requests.
func (h *Host) goDownLocked(reason string) {
	h.downReason = reason
	h.setState(StateDown)
	for _, line := range h.held {
		if m, err := jsonrpc.Parse(line); err == nil && m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	}
	h.held = nil
}

// identity computes what the launch command will run now.
func (h *Host) identity() (*build.Identity, error) {
	spec := h.opts.Spec
	spec.Versions = func(d build.Digest) (string, bool) {
		v, ok := h.versions.Load(d)
		if !ok {
			return "", false
		}
		return v.(string), true
	}
	id, err := build.Compute(spec)
	if err == nil && id.Runtime.Version != "" {
		h.versions.Store(id.Runtime.Digest, id.Runtime.Version)
	}
	return id, err
}

// observeOnce reads /proc for child c after its first message (Linux): by
// then a wrapper has exec'd what really runs.
func (h *Host) observeOnce(c *child) {
	h.mu.Lock()
	first := !c.looked
	c.looked = true
	h.mu.Unlock()
	if !first {
		return
	}
	go func() {
		o := observe(c.pid, true)
		h.mu.Lock()
		c.observed = o
		h.mu.Unlock()
		if o != nil && len(o.Cmdline) > 0 && o.Cmdline[0] != "" {
			h.logf("epoch %s: pid %d runs %s (%s) as %q", c.epoch, c.pid, o.Exe, o.ExeDigest.Short(), o.Cmdline)
		}
	}()
}

// warnMissing says so when the entry or code the launch command names does
// not exist: usually the server was not built yet. The identity records it
// as missing (build.Spec.Unbuilt), so the build that writes it is a change.
func (h *Host) warnMissing(id *build.Identity) {
	for _, a := range id.Artifacts() {
		if a.Missing && (a.Role == build.RoleEntry || a.Role == build.RoleCode) {
			h.logf("warning: %s does not exist (build the server first?): the identity records it as missing, and the build that writes it is new code", a.Path)
		}
	}
}
