package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// devHosts shows in mcpepoch dev's window what the project's hosts do
// between its builds. dev reports the restarts its own builds cause when
// it records them; a server that crashes, goes down or is given up on
// changes nothing dev builds, so dev asks every host for its status every
// devHostPoll and says what changed since it last looked:
//
//   - a new epoch that no build of this dev started: after a crash (the
//     host's quickCrashes is set: crash recovery started it), "the server
//     crashed"; otherwise a restart from elsewhere (mcpepoch restart, a
//     change the host saw on disk, another build). The grants of the epoch
//     that ended ended with it: the renewal the host prepared is offered,
//     with its key where a key counts, as after a build;
//   - a host that went down, or gave up restarting its server, with its
//     reason and the server's last stderr lines; a server that failed the
//     handshake, with its cause;
//   - code on disk that differs from what runs (the host's drift: it ended
//     the epoch's grants) and that no build of this dev followed: said
//     once it is seen at two looks in a row, so that the moment between a
//     save and the build dev starts for it says nothing.
//
// The first look only learns the hosts, except that a host already down
// or given up is reported; so does the look after each build of dev's,
// except that calls that came to wait for a person are named (the
// build's record does not say). A host that stops answering is forgotten.
type devHosts struct {
	ctx    context.Context // dev's: the looks end with it
	root   string
	out    *devOutput
	prompt *devPrompt
	mu     sync.Mutex
	seen   map[string]hostSeen // by agent run
	// offered is the last renewal offered per agent run, so that one is
	// shown once.
	offered map[string]string
	// recording: a build runs or is being recorded (hold): the looks
	// wait until it is done, then learn the hosts afresh (release).
	recording bool
}

// hostSeen is what dev last saw of one host.
type hostSeen struct {
	epoch  string
	pid    int
	state  localapi.State
	reason string
	gaveUp bool
	// waiting names the tools whose calls wait for a person's approval.
	waiting []string
	// drift is the host's drift lines, joined; driftLooks counts the
	// looks in a row that saw the same.
	drift      string
	driftLooks int
}

// devHostPoll is how often dev asks the hosts for their status.
const devHostPoll = 2 * time.Second

// watch looks at the hosts every devHostPoll until w.ctx ends.
func (w *devHosts) watch() {
	ctx := w.ctx
	w.look(ctx, false)
	t := time.NewTicker(devHostPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.look(ctx, true)
		}
	}
}

// hold holds the looks while a build runs and is recorded: what the
// build's restarts did is in the record lines (dev's, or the build's own
// hook's).
func (w *devHosts) hold() {
	w.mu.Lock()
	w.recording = true
	w.mu.Unlock()
}

// release ends hold once the build is recorded (or cancelled), and learns
// the hosts as they are now.
func (w *devHosts) release() {
	w.mu.Lock()
	w.recording = false
	w.mu.Unlock()
	w.look(w.ctx, false)
}

// look asks every host for its status and, with report, says what changed
// since the last look.
func (w *devHosts) look(ctx context.Context, report bool) {
	w.mu.Lock()
	busy := w.recording
	w.mu.Unlock()
	if busy {
		return
	}
	results := askHosts(ctx, w.root, 5*time.Second, notify.Request{Type: localapi.TypeStatus})
	now := map[string]hostSeen{}
	sockets := map[string]string{}
	var lines []string
	var renew []string        // the agent runs whose renewal to offer
	var waiting []waitingSeen // hosts with calls newly waiting for a person
	w.mu.Lock()
	if w.recording { // a build began meanwhile: its record reports
		w.mu.Unlock()
		return
	}
	first := w.seen == nil
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		s, err := localapi.DecodePayload[localapi.Status](r.Response.Payload)
		if err != nil {
			continue
		}
		run := string(s.AgentRun)
		cur := hostSeen{state: s.State, reason: s.Reason, gaveUp: s.GaveUp, waiting: s.Waiting, drift: strings.Join(s.Drift, "; ")}
		if s.Execution != nil {
			cur.epoch, cur.pid = string(s.Execution.Epoch), s.Execution.ProcessID
		}
		now[run], sockets[run] = cur, r.Socket
		prev, known := w.seen[run]
		if cur.drift != "" {
			cur.driftLooks = 1
			if known && prev.drift == cur.drift && prev.epoch == cur.epoch {
				cur.driftLooks = prev.driftLooks + 1
			}
			now[run] = cur
		}
		if !known {
			prev = hostSeen{state: localapi.StateReady}
			if !first && report {
				// A host that started since the last look: nothing
				// ended there that dev saw run.
				prev = cur
			}
		}
		// Calls that came to wait for a person, at every look: the
		// record of a build says what it restarted, not these.
		if tools := newlyWaiting(prev, cur); len(tools) > 0 {
			waiting = append(waiting, waitingSeen{run: run, socket: r.Socket, tools: tools})
		}
		if !report && !first {
			continue
		}
		if l, ended := hostChange(w.out.p, run, prev, cur, s); l != "" {
			lines = append(lines, l)
			if ended {
				renew = append(renew, run)
			}
		}
		if cur.driftLooks == 2 {
			lines = append(lines, w.out.p.warn(fmt.Sprintf("agent run %s: epoch %s: %s", printable(run), printable(cur.epoch), printable(cur.drift))))
		}
	}
	w.seen = now
	w.mu.Unlock()
	for _, l := range lines {
		w.out.line("host", l)
	}
	for _, run := range renew {
		w.offerRenewal(ctx, sockets[run], run)
	}
	for _, a := range waiting {
		// A tool the host's renewal covers is asked by the renewal
		// (dev's prompt, mcpepoch approve): named here are the others.
		if r, err := offeredRenewal(ctx, a.socket); err == nil && r != nil {
			a.tools = slices.DeleteFunc(a.tools, func(t string) bool { return slices.Contains(r.Tools, t) })
		}
		if len(a.tools) > 0 {
			w.out.line("host", waitingLine(w.out.p, a.run, a.tools))
		}
	}
}

// waitingSeen is a host whose calls to tools came to wait for a person
// since the last look.
type waitingSeen struct {
	run, socket string
	tools       []string
}

// hostChange is the line that says what changed on the host of agent run
// run from prev to cur (s is its status), "" for nothing worth a line;
// ended reports an epoch that ended, whose grants did with it.
func hostChange(p painter, run string, prev, cur hostSeen, s localapi.Status) (line string, ended bool) {
	who := "agent run " + printable(run)
	switch {
	case cur.gaveUp && !prev.gaveUp:
		return p.bad(fmt.Sprintf("%s: the host gave up on the server: %s%s", who, printable(cur.reason), lastStderr(s))), prev.epoch != ""
	case cur.state == localapi.StateDown && (prev.state != localapi.StateDown || prev.reason != cur.reason) && !cur.gaveUp:
		return p.bad(fmt.Sprintf("%s: the server is down: %s%s", who, printable(cur.reason), lastStderr(s))), prev.epoch != ""
	case cur.state == localapi.StateStarting && cur.reason != "" && prev.reason != cur.reason:
		return p.bad(fmt.Sprintf("%s: the server failed the handshake: %s", who, printable(cur.reason))), false
	case cur.epoch != "" && prev.epoch != "" && cur.epoch != prev.epoch && s.Crashes > 0:
		return p.bad(fmt.Sprintf("%s: the server crashed: epoch %s ended, and every grant made for it; crash recovery started epoch %s, pid %d",
			who, printable(prev.epoch), printable(cur.epoch), cur.pid)), true
	case cur.epoch != "" && prev.epoch != "" && cur.epoch != prev.epoch:
		return p.warn(fmt.Sprintf("%s: epoch %s ended without a build of this dev (%s, a change the host saw on disk, or another build), and every grant made for it: epoch %s, pid %d",
			who, printable(prev.epoch), selfcmd.Cmd("restart"), printable(cur.epoch), cur.pid)), true
	case cur.epoch != "" && prev.state == localapi.StateDown && cur.state != localapi.StateDown:
		// The grants ended with the epoch that went down: the renewal
		// is prepared once this one's catalog is known.
		return p.ok(fmt.Sprintf("%s: the server runs again: epoch %s, pid %d", who, printable(cur.epoch), cur.pid)), true
	}
	return "", false
}

// newlyWaiting names the tools whose calls wait for a person's approval
// at cur and did not at prev, the last look (the first approval of a
// session, a tool the renewal did not cover).
func newlyWaiting(prev, cur hostSeen) []string {
	var tools []string
	for _, t := range cur.waiting {
		if !slices.Contains(prev.waiting, t) {
			tools = append(tools, t)
		}
	}
	return tools
}

// waitingLine is the line that names tools whose calls wait for a
// person's approval on the host of agent run run: approval takes a person
// at their own terminal, never a key in dev's window.
func waitingLine(p painter, run string, tools []string) string {
	return p.warn(fmt.Sprintf("agent run %s: calls to %s wait for a person's approval: run %s in a terminal of your own",
		printable(run), printable(strings.Join(tools, ", ")), selfcmd.Cmd("approve")))
}

// lastStderr is "; its last stderr: A | B" for the server's last stderr
// lines in s, "" for none.
func lastStderr(s localapi.Status) string {
	if len(s.LastStderr) == 0 {
		return ""
	}
	return "; its last stderr: " + printable(strings.Join(s.LastStderr, " | "))
}

// offerRenewal offers the renewal the host of agent run run, at socket,
// prepared, if any.
func (w *devHosts) offerRenewal(ctx context.Context, socket, run string) {
	if w.prompt == nil {
		return
	}
	r, err := offeredRenewal(ctx, socket)
	if err != nil || r == nil {
		return
	}
	w.mu.Lock()
	if w.offered == nil {
		w.offered = map[string]string{}
	}
	again := w.offered[run] == r.ID
	w.offered[run] = r.ID
	w.mu.Unlock()
	if !again {
		w.prompt.offer(devOffer{socket: socket, run: run, r: *r})
	}
}
