package host

import (
	"fmt"
	"strconv"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// What runs is checked, not assumed. A server can exec new code in place
// (os.execv, a "reload_server" tool): same pid, same pipes, so nothing the
// host sees of the process changes, and new code would answer under the
// old epoch and its grants. So before it forwards a call that a grant
// covers, the host reads the epoch's process image (childproc.ReadImage) and
// compares it with the one it read after the process's first message
// (observeOnce), when a wrapper has exec'd what really runs. A difference
// is an in-process reload: the call is refused authorization_stale
// (in_process_reload) without reaching the server, and the host starts
// the server again under a new epoch (restart: grants ended,
// list_changed, audited), as it does for a reload it sees in the process
// tree (watchTree). On Linux the image is the executable's device and
// inode (/proc/PID/exe), the command line (/proc/PID/cmdline) and the
// auxiliary vector (/proc/PID/auxv), whose addresses the kernel randomizes
// at every exec (ASLR), so that an exec of the same program with the same
// arguments shows too; what it costs per call is measured by
// BenchmarkReadImage. On macOS it is the executable's path and the
// arguments the kernel keeps (sysctl kern.procargs2): an exec of the same
// program with the same arguments is not seen there. Elsewhere nothing is
// read and nothing is checked.

// imageCheckLocked is the refusal of a granted tools/call m of tool when
// the current child's process image is no longer the one read after its
// first message (an in-process exec), nil otherwise. On the first change
// it logs, audits and starts the server again under a new epoch. h.mu is
// held.
func (h *Host) imageCheckLocked(m *jsonrpc.Message, tool string) []byte {
	c := h.child
	if c == nil || !c.imaged {
		return nil
	}
	if c.reloaded == "" {
		now, err := childproc.ReadImage(c.pid)
		what := ""
		if err != nil {
			what = "its image cannot be read any more (" + err.Error() + ")"
		} else {
			what = childproc.ImageChange(c.image, now)
		}
		if what == "" {
			return nil
		}
		c.reloaded = what
		h.logf("epoch %s: pid %d exec'd in place since it started: %s: new code runs in the epoch's process, so a new epoch begins", c.epoch, c.pid, what)
		h.audit.event(audit.TypeIdentityDrift, c.epoch, h.run, map[string]any{
			"changed": []string{"process image of pid " + strconv.Itoa(c.pid)}, "reason": reasonInProcessReload, "detail": what})
		go func() {
			if _, err := h.restart(h.ctx, "in-process exec under pid "+strconv.Itoa(c.pid)+" ("+what+")", restartManual); err != nil {
				h.logf("restart after an in-process exec: %v", err)
			}
		}()
	}
	h.audit.event(audit.TypeAuthorizationDenied, c.epoch, h.run, map[string]any{
		"reason": reasonInProcessReload, audit.FieldTool: tool, "current_epoch": string(c.epoch)})
	return jsonrpc.ErrorLine(m.ID, CodeAuthorizationStale,
		fmt.Sprintf("authorization_stale: %s: pid %d of execution epoch %s exec'd new code in place (%s); the call did not run, the epoch's grants end and the server starts again under a new epoch, which needs its own approval: once it runs, a person runs %s in their own terminal, then call again", reasonInProcessReload, c.pid, c.epoch, c.reloaded, selfcmd.Cmd("approve")),
		map[string]any{
			"error": grant.AuthorizationStale, "reason": reasonInProcessReload,
			"currentEpoch": c.epoch, "tool": tool, "detail": c.reloaded,
			"retry": "refresh tool metadata and request authorization (" + selfcmd.Name() + " approve) once the new epoch runs",
		})
}

// reasonInProcessReload is the reason of a call refused because its
// epoch's process exec'd in place.
const reasonInProcessReload = "in_process_reload"
