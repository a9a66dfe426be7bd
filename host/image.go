package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// What runs is checked, not assumed. A server can exec new code in place
// (os.execv, a "reload_server" tool): same pid, same pipes, so nothing the
// host sees of the process changes, and new code would answer under the
// old epoch and its grants. So before it forwards a call that a grant
// covers, the host reads the epoch's process image (readImage) and
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

// procImage is what the host reads of a process to tell whether it
// exec'd since: fields a platform does not read stay zero.
type procImage struct {
	dev, ino uint64   // of the executable (Linux: /proc/PID/exe)
	args     string   // the command line: its words, NUL-separated
	exe      string   // the executable's path (macOS: kern.procargs2)
	auxv     [32]byte // SHA-256 of /proc/PID/auxv (Linux)
	hasAuxv  bool     // auxv could be read
}

// errNoImage says the platform gives no view of a process image.
var errNoImage = errors.New("this platform gives no view of a process's executable image")

// imageChange says how image now differs from was, in words, or "" when
// it does not. A part was could not read (an auxv the process made
// unreadable from the start) is not compared.
func imageChange(was, now procImage) string {
	switch {
	case was.dev != now.dev || was.ino != now.ino:
		return fmt.Sprintf("its executable is another file (device %d inode %d, was device %d inode %d)", now.dev, now.ino, was.dev, was.ino)
	case was.exe != now.exe:
		return fmt.Sprintf("its executable is %s, was %s", now.exe, was.exe)
	case was.args != now.args:
		return fmt.Sprintf("its command line is %q, was %q", strings.Split(now.args, "\x00"), strings.Split(was.args, "\x00"))
	case was.hasAuxv && (!now.hasAuxv || was.auxv != now.auxv):
		return "its auxiliary vector changed: it exec'd (the same program with the same arguments)"
	}
	return ""
}

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
		now, err := readImage(c.pid)
		what := ""
		if err != nil {
			what = "its image cannot be read any more (" + err.Error() + ")"
		} else {
			what = imageChange(c.image, now)
		}
		if what == "" {
			return nil
		}
		c.reloaded = what
		h.logf("epoch %s: pid %d exec'd in place since it started: %s: new code runs in the epoch's process, so a new epoch begins", c.epoch, c.pid, what)
		h.audit.event(audit.TypeIdentityDrift, c.epoch, h.run, map[string]any{
			"changed": []string{"process image of pid " + itoa(c.pid)}, "reason": reasonInProcessReload, "detail": what})
		go func() {
			if _, err := h.restart(h.ctx, "in-process exec under pid "+itoa(c.pid)+" ("+what+")", restartManual); err != nil {
				h.logf("restart after an in-process exec: %v", err)
			}
		}()
	}
	h.audit.event(audit.TypeAuthorizationDenied, c.epoch, h.run, map[string]any{
		"reason": reasonInProcessReload, audit.FieldTool: tool, "current_epoch": string(c.epoch)})
	return jsonrpc.ErrorLine(m.ID, CodeAuthorizationStale,
		fmt.Sprintf("authorization_stale: %s: pid %d of execution epoch %s exec'd new code in place (%s); the call did not run, the epoch's grants end and the server starts again under a new epoch, which needs its own approval", reasonInProcessReload, c.pid, c.epoch, c.reloaded),
		map[string]any{
			"error": grant.AuthorizationStale, "reason": reasonInProcessReload,
			"currentEpoch": c.epoch, "tool": tool, "detail": c.reloaded,
			"retry": "refresh tool metadata and request authorization (" + selfcmd.Name() + " approve) once the new epoch runs",
		})
}

// reasonInProcessReload is the reason of a call refused because its
// epoch's process exec'd in place.
const reasonInProcessReload = "in_process_reload"

// parseProcargs2 reads what sysctl kern.procargs2 returns for a process
// (macOS, xnu's sysctl_procargsx): argc as a native-endian int32, the
// executable's path, NUL padding, then argc NUL-terminated arguments
// (the environment follows, and is not read). ok is false for a buffer
// of another shape.
func parseProcargs2(b []byte) (exe, args string, ok bool) {
	if len(b) < 4 {
		return "", "", false
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 || argc < 0 {
		return "", "", false
	}
	exe, b = string(b[:i]), b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	words := make([]string, 0, argc)
	for range argc {
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return "", "", false
		}
		words = append(words, string(b[:j]))
		b = b[j+1:]
	}
	return exe, strings.Join(words, "\x00"), true
}
