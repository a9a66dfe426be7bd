package host

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// A server that exits on its own, by kind of exit:
//
//   - exit status 0 (an idle timeout): not a crash. The host is down,
//     idle; the next client request is held and starts the server again
//     under a new epoch (wake). It never counts toward giving up.
//   - any other exit: a crash. The host restarts the server after 100 ms,
//     200 ms, … 6.4 s (recover); client messages that arrive meanwhile
//     are held like those of a rebuild, and answered server_unavailable
//     only if that restart fails. A restart that fails counts as one more
//     quick exit; after Options.MaxCrashes in a row the host gives up
//     (giveUpLocked).
//
// Either way the epoch is over and its grants end with it, as on a
// rebuild: the next call needs a person's approval again.

// idleReason is the down reason after an exit 0.
const idleReason = "the server exited with status 0 on its own (an idle exit, not a crash); the next request starts it again under a new epoch"

// comeBack says what brings a server back once the host gave up.
func comeBack() string {
	return "a build signal (" + selfcmd.Name() + " record), " + selfcmd.Name() + " restart, or a change to a file its identity hashes starts it again"
}

// ErrGaveUp is the cause Run returns with when the host gave up on a
// server that kept exiting, in restart mode close.
var ErrGaveUp = errors.New("the server kept exiting: connection closed (restart mode close)")

// childExited runs when c's process has been reaped.
func (h *Host) childExited(c *child) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.reaped = true
	if c != h.child {
		return // stopped by a restart or shutdown (what it owed was answered then), or not current yet (adoptLocked)
	}
	h.exitedLocked(c)
}

// adoptLocked makes the new child c current. A server that exits at once
// can be reaped before that: its exit is handled now, as if it came after.
func (h *Host) adoptLocked(c *child) {
	h.child = c
	if c.reaped {
		h.exitedLocked(c)
	}
}

// exitedLocked handles the exit of the current child c.
func (h *Host) exitedLocked(c *child) {
	h.child = nil
	h.ended = c
	defer h.releaseVerifiedLocked() // calls held for its identity: as if they came now (identity.go)
	go c.endGroup(h.opts.Grace)     // what the server left in its group runs no epoch
	status := c.exitStatus()
	h.logf("epoch %s: server pid %d exited on its own (%s)", c.epoch, c.pid, status)
	probe := h.probeExitLocked(c)
	h.abortLocked(c, "server_exited", "")
	h.cancelServerRequestsLocked(c)
	// The epoch is over: its grants end with it, as on a rebuild, so that
	// the next call is refused as stale and names the right epoch.
	h.endedRevoked = h.revokeEpochLocked(c.epoch)
	if h.endedRevoked > 0 {
		h.logf("epoch %s: %d grant(s) revoked with the epoch", c.epoch, h.endedRevoked)
	}
	switch {
	case h.state != StateReady:
		// A restart is bringing c up; it fails with this exit (failStart
		// or readyLocked) and decides what follows: crash recovery counts
		// the exit and tries again, a build signal reports it. Starting a
		// second recovery here would race the first one past MaxCrashes.
		h.goDownLocked("the server exited (" + status + ") while starting")
	case c.waitErr == nil:
		h.goDownLocked(idleReason)
		h.idle = true
		h.logf("epoch %s: %s", c.epoch, idleReason)
	case probe:
		// Not a crash: the server did what servers of its era do.
		h.goDownLocked("the server exited (" + status + ") on the server/discover probe; restarting it")
		h.recovering = true
		go h.recover(1)
	default:
		if time.Since(c.started) < h.opts.QuickCrash {
			h.crashes++
		} else {
			h.crashes = 1
		}
		if h.crashes > h.opts.MaxCrashes {
			h.giveUpLocked(fmt.Sprintf("the server exited %d times in a row within %s of starting (last: %s)", h.crashes, h.opts.QuickCrash, status))
			return
		}
		h.goDownLocked("the server exited (" + status + "); restarting it")
		h.recovering = true
		go h.recover(h.crashes)
	}
}

// recover restarts the server after it crashed, with backoff; a start
// that fails counts as one more quick exit, so the host keeps trying (a
// binary briefly missing mid-build) until MaxCrashes, never spinning.
// Client messages are held while it waits (fromClient).
func (h *Host) recover(n int) {
	for {
		select {
		case <-time.After(crashDelay(n)):
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
			h.giveUpLocked(fmt.Sprintf("the server could not be restarted %d times in a row (last: %v)", n, err))
			h.mu.Unlock()
			return
		}
		h.goDownLocked(fmt.Sprintf("the server could not be restarted (%v); trying again", err))
		h.recovering = true
		h.mu.Unlock()
	}
}

// afterFailedStart runs when a restart of trigger t ended in err with no
// server running: a build signal, mcpepoch restart or a watched change
// brought a server that exited or did not answer while it started (a
// syntax error in what was built). That counts as a quick exit, as a
// crash does: the host tries again with backoff (recover), then gives up
// and watches the files its identity hashes. Trying again repeats no
// client request: those the failed server got were answered
// server_restarted, those held for it server_unavailable. The error
// returned says so, for the build's answer.
func (h *Host) afterFailedStart(t trigger, err error) error {
	if t != restartSignal && t != restartManual {
		return err // crash recovery, an idle wake and a credential relaunch decide themselves
	}
	var pm *ProtocolMismatchError
	var nb *notBuiltError
	if h.ctx.Err() != nil || errors.As(err, &pm) || errors.As(err, &nb) {
		return err // the host is ending, or waits for a first build (firststart.go)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.child != nil:
		return err // still running: the identity could not be computed
	case h.recovering:
		return &downError{err: err, next: "crash recovery under way starts it again"}
	}
	h.crashes++
	if h.crashes > h.opts.MaxCrashes {
		h.giveUpLocked(fmt.Sprintf("the server could not be started %d times in a row (last: %v)", h.crashes, err))
		return &downError{err: err, next: "the host is not starting it again on its own: " + comeBack()}
	}
	delay := crashDelay(h.crashes)
	next := fmt.Sprintf("the host starts it again in %s, backing off; after %d failed starts in a row it stops trying until %s",
		delay, h.opts.MaxCrashes+1, strings.TrimSuffix(comeBack(), " starts it again"))
	h.gaveUp = false // a watch of a host that had given up ends: recovery takes over
	h.goDownLocked(fmt.Sprintf("the server could not be started (%v); %s", err, next))
	h.recovering = true
	go h.recover(h.crashes)
	return &downError{err: err, next: next}
}

// crashDelay is how long crash recovery waits before its nth restart in
// a row: 100 ms, doubling up to 6.4 s.
func crashDelay(n int) time.Duration {
	return time.Duration(100<<min(max(n, 1)-1, 6)) * time.Millisecond
}

// downError is a restart that left no server running: its cause, and
// what the host does next.
type downError struct {
	err  error
	next string
}

func (e *downError) Error() string {
	return "server down: " + e.err.Error() + "; " + e.next
}
func (e *downError) Unwrap() error { return e.err }

// giveUpLocked stops restarting a server that keeps exiting. It stays
// visible (mcpepoch status exits 4 and says what brings it back) and
// recoverable: a build signal, mcpepoch restart or a change to a hashed
// file (watchWhileDown) starts it again. In restart mode close the
// connection closes instead, so that the client shows the failure.
func (h *Host) giveUpLocked(why string) {
	h.goDownLocked(why + "; not restarting it on its own: " + comeBack())
	h.gaveUp, h.recovering = true, false
	h.logf("%s", h.downReason)
	if h.opts.Mode == ModeClose && h.everUp { // before a first start there is no session to close

		h.cancel(fmt.Errorf("%w: %s", ErrGaveUp, why))
		return
	}
	go h.watchWhileDown()
}

// watchInterval is how often a host that gave up looks at the files its
// identity hashes.
const watchInterval = time.Second

// watchWhileDown recomputes the identity every watchInterval while the
// host has given up, and tries the server again when it changed: the
// developer fixed the code, or the missing binary is back.
func (h *Host) watchWhileDown() {
	base, _ := h.identity()
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		still := h.gaveUp
		h.mu.Unlock()
		if !still {
			return
		}
		next, err := h.identity()
		if err != nil || base == nil {
			base = next
			continue
		}
		changed := build.Changes(base, next)
		base = next
		if len(changed) == 0 {
			continue
		}
		h.logf("%v changed while the server was down: starting it again", changed)
		if _, err := h.restart(h.ctx, "hashed files changed", restartSignal); err != nil {
			h.logf("start after %v changed: %v", changed, err)
		}
	}
}

// wakeLocked starts the server again after an idle exit, for the client
// message that has just been held.
func (h *Host) wakeLocked() {
	h.idle, h.recovering = false, true
	go func() {
		_, err := h.restart(h.ctx, "a request after the server's idle exit", restartIdle)
		if err == nil || h.ctx.Err() != nil {
			return
		}
		h.logf("start after the idle exit: %v", err)
		h.mu.Lock()
		if h.child == nil && !h.gaveUp {
			h.idle, h.recovering = true, false // the next request tries again; nothing counts
		}
		h.mu.Unlock()
	}()
}
