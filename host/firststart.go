package host

import (
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// Before the first start.
//
// A client often starts the host before the project was ever built: the
// launch command names a dist/server.js that tsc has not written yet, or
// a binary go build has not linked. Until a server of this host has
// answered initialize (or server/discover), a server that exits or cannot
// be executed means "not built yet", not a lost session:
//
//   - a launch command whose entry does not exist yet is not launched
//     at all (notBuiltError), so it neither prints the runtime's errors
//     nor counts as a crash;
//   - the client's initialize is held, never answered server_restarted: a
//     server that exits before answering it has not begun the session,
//     and the next one (brought by a build signal, the manifest watch, a
//     change to a file the identity hashes, or crash recovery) gets it,
//     once per server;
//   - any other request of the client while no server runs is answered at
//     once with server_unavailable, "not built yet: run your build (…)",
//     and never forwarded; a request that was forwarded to a server that
//     then exited still gets server_restarted, since it may have run;
//   - once Options.FirstStartWait (host.first_start_wait, 3 minutes) has
//     passed with no server running, the held initialize gets that error
//     too. A client that cancels its initialize or closes stdin ends the
//     wait sooner.

// ReasonNotBuilt is error.data.reason of the server_unavailable answer
// given while no server of the host has started yet.
const ReasonNotBuilt = "not_built"

// waitsForFirstStart reports whether a client initialize that arrives
// now, while the state is not ready, is held for the next server rather
// than answered.
func (h *Host) waitsForFirstStartLocked() bool {
	return !h.everUp || h.state != StateDown || h.recovering || h.idle
}

// holdInitLocked keeps the client's initialize m for the next server
// (sendInitLocked); after an idle exit it starts that server.
func (h *Host) holdInitLocked(m *jsonrpc.Message) {
	h.inflight[jsonrpc.IDKey(m.ID)] = &call{id: m.ID, method: m.Method, sent: time.Now()}
	if h.state == StateDown && h.idle {
		h.wakeLocked()
	}
}

// armFirstWaitLocked starts the FirstStartWait bound, once, when the
// client's first initialize arrives before any server started.
func (h *Host) armFirstWaitLocked() {
	if h.everUp || h.firstWaitArmed {
		return
	}
	h.firstWaitArmed = true
	time.AfterFunc(h.opts.FirstStartWait, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.firstWaitOver = true
		if h.state == StateDown && h.ctx.Err() == nil {
			h.endFirstWaitLocked()
		}
	})
}

// endFirstWaitLocked answers a held initialize with "not built yet" once
// FirstStartWait has passed and no server runs.
func (h *Host) endFirstWaitLocked() {
	if h.everUp || !h.firstWaitOver {
		return
	}
	for k, cl := range h.inflight {
		if cl.method != "initialize" {
			continue
		}
		delete(h.inflight, k)
		h.logf("no server started within %s (host.first_start_wait): answering the client's initialize", h.opts.FirstStartWait)
		h.toClient(h.notBuiltLocked(&jsonrpc.Message{ID: cl.id, Method: cl.method}))
	}
}

// notBuiltLocked is the answer to request m while no server of the host
// has started yet: server_unavailable, naming what is missing.
func (h *Host) notBuiltLocked(m *jsonrpc.Message) []byte {
	detail := h.downReason
	if len(h.unbuilt) > 0 {
		detail = strings.Join(h.unbuilt, ", ") + " not found; " + detail
	}
	msg := "not built yet: run your build (" + detail + "); if it ran, the launch command in " + config.FileName +
		" names another file than the one it writes (" + selfcmd.Cmd("doctor") + " says); no server of this host has started yet, so the request was not forwarded"
	if m.Method == "initialize" {
		msg += "; waited " + h.opts.FirstStartWait.String() + " (host.first_start_wait)"
	}
	data := map[string]any{"reason": ReasonNotBuilt, "method": m.Method, "requestId": m.ID, "detail": h.downReason}
	if len(h.unbuilt) > 0 {
		data["missing"] = h.unbuilt
	}
	return jsonrpc.ErrorLine(m.ID, CodeServerUnavailable, msg, data)
}

// notBuiltStart reports whether err, from starting the first server, is
// a launch command whose program is a path that does not exist yet (a
// binary the build has not written): the host then waits for a build
// instead of failing. A bare name not found in $PATH stays an error.
func notBuiltStart(command []string, err error) bool {
	var nb *notBuiltError
	return errors.As(err, &nb) || len(command) > 0 && strings.ContainsRune(command[0], '/') && errors.Is(err, fs.ErrNotExist)
}

// notBuiltError is the start, before any server of the host has started,
// of a launch command whose entry (the file the runtime loads: a
// dist/server.js tsc has not written, a binary) the identity records as
// missing: the server is not launched.
type notBuiltError struct {
	entry string
}

func (e *notBuiltError) Error() string {
	return "entry " + e.entry + " does not exist, so the server was not launched"
}

// missingCode returns the entry and code paths of id that do not exist.
func missingCode(id *build.Identity) []string {
	var out []string
	for _, a := range id.Artifacts() {
		if a.Missing && (a.Role == build.RoleEntry || a.Role == build.RoleCode) {
			out = append(out, a.Path)
		}
	}
	return out
}
