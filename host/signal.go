package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/treewatch"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// A build reaches the host two ways: the hook's signal on the socket, and
// a new build id in .mcpepoch/manifest.toml, which the host watches. The
// second is for a hook that cannot connect to any socket (an agent's
// sandbox that blocks unix sockets): the server still restarts within a
// second. Either way the signal is a hint; the host recomputes the
// identity. Approval goes over the socket only.

// serveBuild answers a build signal: recorded in the audit log as the
// hook's claim, then (build_complete) a restart if the identity changed.
// A build the manifest watch acted on already gets that outcome
// (signal.go).
func (h *Host) serveBuild(ctx context.Context, _ notify.Peer, req notify.Request) notify.Response {
	ran := false
	out, err := h.signals.once(req.Build, func() (restartOutcome, error) { ran = true; return h.onBuild(ctx, req, "socket") })
	if !ran {
		out.identity, out.manifest = nil, nil // read for the manifest watch's signal, a while ago: drift is computed now
	}
	return h.outcome(out, err)
}

// serveRestart answers mcpepoch restart: a new epoch now.
func (h *Host) serveRestart(ctx context.Context, _ notify.Peer, _ notify.Request) notify.Response {
	out, err := h.restart(ctx, "mcpepoch restart", restartManual) // reads the config first (replace)
	return h.outcome(out, err)
}

// outcome is the answer to a build signal or restart request.
func (h *Host) outcome(out restartOutcome, err error) notify.Response {
	if err != nil {
		resp := h.fail(localapi.CodeRestartFailed, err)
		if se, ok := errors.AsType[*startError](err); ok {
			resp.Stderr = se.stderr()
		}
		h.mu.Lock()
		if c := h.child; c != nil && h.state == StateReady {
			resp.Error += fmt.Sprintf("; the running server is unchanged: pid=%d epoch=%s", c.pid, c.epoch)
		}
		h.mu.Unlock()
		return resp
	}
	resp := h.response()
	resp.Type, resp.Changed = string(out.Outcome), out.Changed
	h.mu.Lock()
	resp.Policy = h.policyLinesLocked()
	h.mu.Unlock()
	switch out.Outcome {
	case localapi.OutcomeRestarted:
		resp.GrantsRevoked = out.GrantsRevoked
		resp.OldEpoch, resp.NewEpoch = string(out.OldEpoch), string(out.NewEpoch)
		resp.OldPID, resp.NewPID = out.OldPID, out.NewPID
		resp.Drift = h.restartDrift(out)
	case localapi.OutcomeClosed:
		resp.GrantsRevoked = out.GrantsRevoked
		resp.OldEpoch, resp.OldPID = string(out.OldEpoch), out.OldPID
	case localapi.OutcomeHeld, localapi.OutcomeUnchanged:
		resp.Epoch, resp.PID = string(out.NewEpoch), out.NewPID
		resp.GrantsRevoked = out.GrantsRevoked // by a stricter mcpepoch.toml (onBuild)
		resp.Drift = h.buildDrift(out.identity, out.manifest)
		h.mu.Lock()
		rest := h.config.rest
		h.mu.Unlock()
		if rest {
			// Why a build that changed settings restarted nothing.
			resp.Drift = append(resp.Drift, config.FileName+" changed settings outside [grants] (code, entry, deps …): the host keeps the settings it started with: reconnect the client (restart its MCP server) to apply them")
		}
	default:
		return h.fail(notify.CodeInternal, fmt.Errorf("restart ended without an outcome (%q)", out.Outcome))
	}
	return resp
}

// buildFields describes a build signal for the audit log: the hook's word
// (build id, status, what its manifest says changed), recorded as a claim;
// the host's own view follows in server_replaced. It returns the
// project's manifest as read, nil when it was not.
func (h *Host) buildFields(req notify.Request) (map[string]any, *manifest.File) {
	f := map[string]any{"build": req.Build, "exit_code": strconv.Itoa(req.ExitCode)}
	if req.Manifest != layout.Manifest(h.opts.Dir) {
		return f, nil
	}
	m, err := manifest.Read(req.Manifest)
	if err != nil {
		return f, nil
	}
	if string(m.Build.ID) == req.Build {
		f["changed"] = m.Changed()
		f["status"] = m.Build.Status
	}
	return f, m
}

// current reports the running epoch without changing anything.
func (h *Host) current() (restartOutcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.child == nil {
		return restartOutcome{}, fmt.Errorf("no server is running (%s)", h.downReason)
	}
	return restartOutcome{Outcome: localapi.OutcomeUnchanged, NewEpoch: h.child.epoch, NewPID: h.child.pid}, nil
}

// manifestGrace is how long the manifest watch leaves the socket to
// bring a new build first: that signal carries the hook's own word.
const manifestGrace = 250 * time.Millisecond

// manifestPoll is how often the manifest is compared when file events
// cannot be set up.
const manifestPoll = 500 * time.Millisecond

// buildSignals makes one build id one restart, whichever way it came
// first: the other way gets the same outcome. It remembers the last
// signalMemory ids: the manifest watch reads an id, waits manifestGrace,
// and by then the socket may have brought that build and later ones.
type buildSignals struct {
	mu   sync.Mutex
	runs []*signalRun // oldest first, at most signalMemory
}

// signalMemory is how many recent build ids buildSignals remembers.
const signalMemory = 16

type signalRun struct {
	id   string
	done chan struct{}
	out  restartOutcome
	err  error
}

// once runs f for build id, or waits for the run already made for it and
// returns its outcome. An empty id is always run.
func (b *buildSignals) once(id string, f func() (restartOutcome, error)) (restartOutcome, error) {
	b.mu.Lock()
	if r := b.findLocked(id); r != nil {
		b.mu.Unlock()
		<-r.done
		return r.out, r.err
	}
	r := &signalRun{id: id, done: make(chan struct{})}
	if len(b.runs) == signalMemory {
		b.runs = b.runs[1:]
	}
	b.runs = append(b.runs, r)
	b.mu.Unlock()
	r.out, r.err = f()
	close(r.done)
	return r.out, r.err
}

func (b *buildSignals) findLocked(id string) *signalRun {
	if id == "" {
		return nil
	}
	for _, r := range b.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

// seen reports whether build id has come already.
func (b *buildSignals) seen(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.findLocked(id) != nil
}

// onBuild acts on a build signal: recorded in the audit log as the hook's
// claim (via says how it came), then, for build_complete, a restart if
// the identity changed, which reads the project's config first whether
// it replaces the server or not (replace); for build_failed, the config
// is read here.
func (h *Host) onBuild(ctx context.Context, req notify.Request, via string) (restartOutcome, error) {
	var ahead func() (*build.Identity, error)
	if req.Type != localapi.TypeBuildFailed {
		ahead = h.identityAhead()
		defer ahead() // not left running when restart had no use for it
	}
	fields, m := h.buildFields(req)
	fields["via"] = via
	h.mu.Lock()
	h.buildFailed = req.Type == localapi.TypeBuildFailed
	h.mu.Unlock()
	h.audit.event(audit.TypeBuildRecorded, "", h.run, fields)
	var out restartOutcome
	var err error
	raised := 0
	if req.Type == localapi.TypeBuildFailed {
		raised = h.rereadConfig()
		out, err = h.current()
	} else {
		why := "build " + req.Build
		if via == "manifest" {
			why += " (seen in the manifest)"
		}
		out, err = h.restartFrom(ctx, why, restartSignal, ahead)
	}
	out.manifest = m
	// Grants a stricter mcpepoch.toml ended count as the signal's too,
	// whatever else it did: mcpepoch dev offers their renewal.
	out.GrantsRevoked += raised
	return out, err
}

// watchManifest treats each new build id written to the run manifest as
// a build signal, until ctx ends. The build recorded when the host
// started is not one.
func (h *Host) watchManifest(ctx context.Context) {
	path := layout.Manifest(h.opts.Dir)
	last := ""
	if m, err := manifest.Read(path); err == nil {
		last = string(m.Build.ID)
	}
	changes := make(chan struct{}, 1)
	watchFile(ctx, path, changes, h.logf)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
		m, err := manifest.Read(path)
		if err != nil || string(m.Build.ID) == last {
			continue // gone, being replaced, or corrupt: record reports that
		}
		last = string(m.Build.ID)
		select {
		case <-ctx.Done():
			return
		case <-time.After(manifestGrace):
		}
		if h.signals.seen(last) {
			continue
		}
		req := notify.Request{Type: localapi.TypeBuildComplete, Build: last, Manifest: path, ExitCode: m.Build.ExitCode}
		if m.Build.ExitCode != 0 {
			req.Type = localapi.TypeBuildFailed
		}
		out, err := h.signals.once(last, func() (restartOutcome, error) { return h.onBuild(ctx, req, "manifest") })
		if err != nil {
			h.logf("build %s (seen in the manifest): %v", last, err)
		} else {
			h.logf("build %s (seen in the manifest): %s", last, out.Outcome)
		}
	}
}

// watchFile sends on changes (without blocking) when path may have
// changed: events of its directory (treewatch.WatchDir), which is created if
// missing, else a comparison every manifestPoll. It returns once watching.
func watchFile(ctx context.Context, path string, changes chan<- struct{}, logf func(string, ...any)) {
	poke := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	dir := filepath.Dir(path)
	err := layout.MkdirAll(dir)
	if err == nil {
		err = treewatch.WatchDir(ctx, dir, func(name string) {
			if name == path || name == "" {
				poke()
			}
		}, func() {
			// The directory itself went away: poll from now on.
			go pollFile(ctx, path, poke)
		}, logf)
	}
	if err != nil {
		logf("manifest watch: %v: comparing %s every %s instead", err, path, manifestPoll)
		go pollFile(ctx, path, poke)
	}
}

// pollFile calls poke when the file's size, mtime or identity (device and
// inode: a rename over it of a file of the same size and mtime) changes,
// or it appears or goes away.
func pollFile(ctx context.Context, path string, poke func()) {
	last, _ := os.Lstat(path)
	tick := time.NewTicker(manifestPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fi, _ := os.Lstat(path)
			if !sameStamp(last, fi) {
				last = fi
				poke()
			}
		}
	}
}

// sameStamp reports whether a and b (nil: no file) are the same file with
// the same size and mtime.
func sameStamp(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
