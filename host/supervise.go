package host

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// start launches the server under a new epoch with identity id (computed by
// the caller just before) and starts reading its stdout. It does not make
// the child current.
func (h *Host) start(id *build.Identity, ep epoch.Epoch) (*child, error) {
	h.mu.Lock()
	everUp := h.everUp
	h.mu.Unlock()
	if !everUp && id.Entry.Missing {
		// Not built yet (firststart.go): launching would only fail, and
		// count as a crash.
		return nil, &notBuiltError{entry: id.Entry.Path}
	}
	b := h.openBroker(ep)
	env, envScopes := h.envDelivery(ep, h.childEnv(b))
	c, err := startChild(h.opts.Command, h.opts.Dir, h.log, h.guard, ep, id, env)
	if err != nil {
		if b != nil {
			b.Close()
		}
		return nil, fmt.Errorf("start %s: %w", h.opts.Command[0], err)
	}
	c.envScopes = envScopes
	h.serveBroker(c, b)
	go c.run(h.opts.MaxLine, func(line []byte, over *overflow, more bool) { h.fromChildMore(c, line, over, more) }, func() { h.childExited(c) })
	if h.opts.AllowSelfReload {
		go h.watchTree(c)
	}
	h.mu.Lock()
	h.unbuilt = missingCode(id)
	h.mu.Unlock()
	h.infof("epoch %s: started pid %d: %v (entry %s %s)", ep, c.pid, h.opts.Command, id.Entry.Path, id.Entry.Digest.Short())
	h.writeRecord(c)
	rec := h.record(c)
	fields := map[string]any{"pid": strconv.Itoa(c.pid), audit.FieldEntry: string(rec.EntryDigest),
		"runtime": rec.Runtime, "runtime_digest": string(rec.RuntimeDigest), "dir": rec.WorkingDirectory,
		"command": rec.LaunchCommand, "label": rec.ServerLabel}
	if rec.LockfileDigest != "" {
		fields["lockfile"] = string(rec.LockfileDigest)
	}
	if f := h.builtRuntimeFields(id); f != nil {
		maps.Copy(fields, f)
		h.infof("epoch %s: runs the runtime %s, not the one the last successful build %s resolved: %s", ep, describeRuntime(id.Runtime), f["built_runtime_build"], f["built_runtime"])
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

// reasonHostStopped is the reason of the requests in flight when the host
// shuts down (the client closed the connection, the host was stopped).
const reasonHostStopped = "host_stopped"

// abortLocked answers every request in flight at child c with one error and
// forgets it: it is never retried (seed: "do not automatically repeat a
// write in the new process"; a timeout is not proof it did not run).
// subscriptions/listen requests are kept for re-sending when next is set.
func (h *Host) abortLocked(c *child, reason string, next epoch.Epoch) {
	for k, cl := range h.inflight {
		if cl.child != c {
			continue
		}
		if cl.method == "initialize" && (next != "" || !h.everUp) {
			continue // kept: the next child answers it, the session has not begun (firststart.go)
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
		switch reason {
		case "server_exited":
			// Many clients show only the message: it says what happened.
			data["exitStatus"] = c.exitStatus()
			when := "while this request was in flight"
			if cl.method == "initialize" {
				when = "while starting, before it answered initialize"
			}
			msg = "server_restarted (server_exited): the server " + exitText(c) + " " + when + "; the request was not retried and may or may not have taken effect: " +
				"check whether it did before calling again (" + selfcmd.Cmd("status") + " shows why the server exited)"
		case reasonHostStopped:
			msg = "server_restarted (host_stopped): the host is shutting down and stopped the server while this request was in flight; the request was not retried and may or may not have taken effect: " +
				"reconnect the server from the client (it starts a new host), then check whether it did before calling again"
		case reasonCredentialRelaunch:
			data["currentEpoch"] = next
			msg = "server_restarted: the server was started again under the same epoch, with a credential a person approved (deliver = \"env\"), while this request was in flight; it was not retried and may or may not have taken effect: " +
				"check whether it did before calling again"
		default:
			data["currentEpoch"] = next
			msg = "server_restarted: execution epoch changed while this request was in flight; it was not retried and may or may not have taken effect: " +
				"list the tools again, check whether it did, then call again (a call that needs a grant needs one for the new epoch: " + selfcmd.Cmd("approve") + ")"
		}
		h.abortToClientLocked(jsonrpc.ErrorLine(cl.id, CodeServerRestarted, msg, data))
		h.abortedLocked(cl, reason)
	}
}

// abortedLocked records that request cl, which its server got, ended
// without its answer reaching the client, and why: the call_aborted
// record that audit verify pairs with the call's tool_called.
func (h *Host) abortedLocked(cl *call, reason string) {
	fields := map[string]any{"reason": reason, audit.FieldMethod: cl.method, audit.FieldRequestID: string(cl.id)}
	if cl.tool != "" {
		fields[audit.FieldTool] = cl.tool
	}
	h.audit.event(audit.TypeCallAborted, cl.child.epoch, h.run, fields)
}

// goDownLocked records that no child runs and answers held requests.
func (h *Host) goDownLocked(reason string) {
	h.downReason = reason
	h.setState(StateDown)
	for _, line := range h.held {
		if m, err := jsonrpc.ParseClient(line); err == nil && m.IsRequest() {
			h.toClient(h.unavailableLocked(m))
		}
	}
	h.held = nil
	h.releaseAbortsLocked()
	h.endFirstWaitLocked()
}

// observeOnce reads /proc for child c after its first message (Linux): by
// then a wrapper has exec'd what really runs. The process image, which
// every granted call is checked against (image.go), is read at once.
func (h *Host) observeOnce(c *child) {
	h.mu.Lock()
	first := !c.looked
	c.looked = true
	h.mu.Unlock()
	if !first {
		return
	}
	im, err := childproc.ReadImage(c.pid)
	h.mu.Lock()
	c.image, c.imaged = im, err == nil
	isFirst := c.first
	h.mu.Unlock()
	if isFirst {
		h.startFirstCheck(c) // while the client initializes (identity.go)
	}
	switch {
	case err == nil && im.AuxvUnread():
		h.logf("epoch %s: the auxiliary vector of pid %d cannot be read: an exec of the same program with the same arguments in place is not seen", c.epoch, c.pid)
	case err != nil && err != childproc.ErrNoImage:
		h.logf("epoch %s: the process image of pid %d cannot be read (%v): an exec of new code in place is not seen", c.epoch, c.pid, err)
	}
	go func() {
		o := childproc.Observe(c.pid, true)
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
	for _, p := range missingCode(id) {
		h.logf("warning: %s does not exist (build the server first?): the identity records it as missing, and the build that writes it is new code", p)
	}
}

// exitText says how child c ended, for a message: its exit status once it
// was reaped, else that it is being stopped.
func exitText(c *child) string {
	select {
	case <-c.done:
		return "exited (" + c.exitStatus() + ")"
	default:
		return "failed to start and is being stopped"
	}
}
