// Package hook is the build hook's core: it records one build — hashes
// what will run, writes the run manifest — and signals every host of the
// project, returning what was recorded and what each host did. mcpepoch
// record is a command line around Record; a development loop or a test
// calls Record the same way.
//
// The hook's signal is a hint: each host recomputes the identity itself.
// A hook never fails because no host is listening; it says so (Result.Hosts
// is empty) and keeps the build in the builds log instead (package audit;
// layout.Builds), since the hosts' audit log has one writer per host.
package hook

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Spec is one build to record, every setting already resolved
// (config.Config.Resolve: flag, else mcpepoch.toml, else default).
type Spec struct {
	// Root is the project root, absolute with symlinks resolved.
	Root string
	// Label is the server label written to the manifest.
	Label string
	// Identity is what to hash; its Dir is Root. Record sets BestEffort
	// when ExitCode is not zero.
	Identity build.Spec
	// ExitCode is the build's own exit status. Non-zero records a failed
	// build: hosts are told (build_failed) and restart nothing.
	ExitCode int
	// Timeout bounds the wait for every host's answer, all together. A
	// host that has not answered the trees request, or acknowledged the
	// build signal, within notify.AnswerWait is not waited for: its
	// outcome is a *notify.NotAnsweringError (a stopped host, or a socket
	// that is no host's, must not hold the build up); a host sees the new
	// manifest by itself all the same.
	Timeout time.Duration
	// Recorded, when set, is called once the manifest is written and
	// before any host is signalled, so that a caller can report the build
	// while hosts restart.
	Recorded func(*Build)
	// Ahead, when set, is the trees request sent to the hosts of Root
	// before Record was called (AskAhead): Record takes their trees from
	// its answers, unless it waited for the manifest lock (aheadLockWait),
	// and signals them over its connections. Record closes it.
	Ahead *Ahead
}

// Build is a recorded build.
type Build struct {
	// Manifest is the run manifest's path (layout.Manifest) and File what
	// was written there.
	Manifest string
	File     *manifest.File
	// First: no build was recorded before this one; every artifact is new.
	First bool
	// Prev is the manifest this build replaced, read under the lock; nil
	// when First.
	Prev *manifest.File
	// Identity is what was hashed.
	Identity *build.Identity
	// TreesFrom is the run id of the host whose current tree digests
	// (localapi.TypeTrees) stand in the identity instead of a walk; empty
	// when the hook walked every tree itself.
	TreesFrom string
}

// Failed reports whether the build itself failed (non-zero exit code).
func (b *Build) Failed() bool { return b.File.Build.ExitCode != 0 }

// HostOutcome is one host's answer to the build signal.
type HostOutcome struct {
	// Result is the exchange with the host (notify.Broadcast): its socket,
	// its response, or why there is none.
	notify.Result
	// Outcome is what the signal led to there (localapi.OutcomeOf).
	Outcome localapi.Outcome
}

// Result is what Record did.
type Result struct {
	Build
	// Hosts holds one outcome per host found, in Broadcast's order; empty
	// (not nil) when no host is listening.
	Hosts []HostOutcome
	// BuildsLogErr is why the build could not be added to the builds log
	// when no host heard of it; the build is recorded all the same.
	BuildsLogErr error
	// ManifestSyncErr is why the manifest, in place and read by the hosts,
	// could not be made durable (its fsync failed): a crash may lose it.
	ManifestSyncErr error
}

// Record records the build s describes and signals every host of the
// project: under the manifest lock (manifest.Lock) it reads the previous
// manifest, hashes the identity (taking the code and dependency trees a
// host keeps current from that host's answer, localapi.TypeTrees, asked
// for before the lock when s.Ahead is set, and walking the others) and
// writes the new manifest with a fresh BuildID
// (manifest.Publish); then it sends build_complete (or build_failed) to
// every host and waits up to s.Timeout for their answers (a host that
// does not answer at once is not waited for: Spec.Timeout). With no host
// listening it appends the build to the builds log. The manifest's fsync
// runs meanwhile; Record returns once it is done.
//
// Errors: a previous manifest that cannot be read is a *ManifestError (the
// file is left as it is); waiting for the lock or hashing ends with an
// *InterruptedError when ctx does; build.Compute's errors are returned as
// they are. In every case the manifest is left as it was and no host is
// signalled. A host's failure is not an error: it is its HostOutcome.
func Record(ctx context.Context, s Spec) (*Result, error) {
	// One connection per host for the trees request and the signal.
	if s.Ahead != nil && s.Ahead.root != s.Root {
		s.Ahead.Close()
		s.Ahead = nil
	}
	if s.Ahead == nil {
		s.Ahead = &Ahead{root: s.Root, peers: notify.NewPeers(s.Root)}
	}
	defer s.Ahead.Close()
	peers := s.Ahead.peers
	b, durable, err := write(ctx, s, peers)
	if err != nil {
		return nil, err
	}
	// The manifest's fsync runs while the hosts answer (or beside the
	// builds log's own fsync, when none listens): hosts read the manifest
	// as soon as it is in place, and its durability is needed only by the
	// time record exits, not before the signal.
	synced := make(chan error, 1)
	go func() { synced <- durable() }()
	if s.Recorded != nil {
		s.Recorded(b)
	}
	res := &Result{Build: *b, Hosts: []HostOutcome{}}
	// Ack: a host that has not acknowledged the signal within
	// notify.AnswerWait, or is silent for notify.SilenceWait after, is
	// reported as not answering and not waited for.
	req := notify.Request{Type: localapi.TypeBuildComplete, Build: string(b.File.Build.ID), Manifest: b.Manifest, ExitCode: s.ExitCode, Ack: true}
	if b.Failed() {
		req.Type = localapi.TypeBuildFailed
	}
	bctx, cancel := context.WithTimeout(ctx, s.Timeout)
	results := peers.Broadcast(bctx, req)
	cancel()
	for _, r := range results {
		res.Hosts = append(res.Hosts, HostOutcome{Result: r, Outcome: localapi.OutcomeOf(r.Response, r.Err)})
	}
	if len(results) == 0 {
		res.BuildsLogErr = logBuild(s.Root, b.File)
	}
	res.ManifestSyncErr = <-synced
	return res, nil
}

// write hashes the build and writes the manifest, under the manifest lock,
// and returns the manifest's fsync to run (manifest.Publish). The hosts'
// trees are asked for over peers.
func write(ctx context.Context, s Spec, peers *notify.Peers) (*Build, func() error, error) {
	// Waiting for the lock and hashing can take long (another record
	// holds the lock; a dependency tree is huge; a lockfile is a FIFO):
	// both give way to ctx, and the manifest is left as is.
	locking := time.Now()
	unlock, err := Interruptible(ctx, "waiting for the manifest lock", func() (func(), error) { return manifest.Lock(s.Root) },
		func(unlock func()) { unlock() })
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	waited := time.Since(locking) > aheadLockWait
	// The hosts are dialled and asked for their trees (unless s.Ahead did
	// already) while the previous manifest is read and decoded (the trees
	// request changes nothing in a host, so it is sent before the manifest
	// is known to be readable); without that request the hosts are only
	// dialled, and nothing is sent to them unless the manifest can be
	// written.
	spec := s.Identity
	wantTrees := !spec.Rehash && spec.Trees == nil
	asked := dialHosts(ctx, s, peers, wantTrees, waited)
	mpath := layout.Manifest(s.Root)
	prev, err := manifest.Read(mpath)
	if err != nil && !manifest.IsNotExist(err) {
		asked()
		return nil, nil, &ManifestError{Path: mpath, Err: err}
	}
	spec.BestEffort = spec.BestEffort || s.ExitCode != 0
	spec.Versions = prev.RuntimeVersion
	from := ""
	if wantTrees {
		// Compute hashes what is no tree (command, entry, lockfiles)
		// while the hosts answer, and waits for them at its first tree.
		known := sync.OnceValue(func() treesFunc {
			return treesOf(asked(), func(run string) {
				if from == "" {
					from = run
				}
			})
		})
		spec.Trees = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
			if f := known(); f != nil {
				return f(root, opt, walk)
			}
			return walk()
		}
	}
	id, err := Interruptible(ctx, "hashing the build", func() (*build.Identity, error) { return build.Compute(spec) }, nil)
	if err == nil && ctx.Err() != nil {
		err = interrupted(ctx, "hashing the build")
	}
	if ie, ok := err.(*InterruptedError); ok {
		ie.Kept = mpath
	}
	if err != nil {
		return nil, nil, err
	}
	asked() // done with the connections the signal goes over (an identity with no tree did not wait)
	now := time.Now()
	m := manifest.New(s.Label, epoch.NewBuildID(now), now, s.ExitCode, id, prev)
	durable, err := publish(mpath, m)
	if err != nil {
		return nil, nil, err
	}
	return &Build{Manifest: mpath, File: m, First: prev == nil, Prev: prev, Identity: id, TreesFrom: from}, durable, nil
}

// publish writes the manifest (manifest.Publish); tests replace it.
var publish = manifest.Publish

// dialHosts dials the hosts in the background and, when wantTrees, asks
// them for their trees, or takes the trees s.Ahead asked for unless the
// manifest lock was waited for (waited, longer than aheadLockWait: more
// builds may have written since the hosts answered). The func it returns
// waits until that is done and returns the trees (nil without wantTrees).
func dialHosts(ctx context.Context, s Spec, peers *notify.Peers, wantTrees, waited bool) func() []hostTree {
	var trees []hostTree
	asked := make(chan struct{})
	go func() {
		defer close(asked)
		switch {
		case !wantTrees:
			dctx, cancel := context.WithTimeout(ctx, min(s.Timeout, treesTimeout))
			defer cancel()
			peers.Connect(dctx)
		case s.Ahead.done != nil && !waited:
			<-s.Ahead.done
			trees = s.Ahead.trees
		default:
			if s.Ahead.done != nil {
				<-s.Ahead.done // its connections are the ones asked again
			}
			trees = askTrees(ctx, peers, s.Timeout)
		}
	}()
	return func() []hostTree {
		<-asked
		return trees
	}
}

// logBuild appends the build to the builds log when no host heard of it:
// hosts record builds in the audit log, but one writer per file, so the
// hook keeps its own hash-chained log (package audit).
// A build the log cannot take is counted for its next records_lost record.
func logBuild(root string, m *manifest.File) error {
	changed := m.Changed()
	if changed == nil {
		changed = []string{}
	}
	ev := audit.Event{Type: audit.TypeBuildRecorded, Fields: map[string]any{
		"build": m.Build.ID, "status": m.Build.Status, "exit_code": strconv.Itoa(m.Build.ExitCode),
		"changed": changed, "hosts": "none listening"}}
	// One record per process: the head's fdatasync would double the
	// syncs of a record with no host listening (audit.Options.LazyHead).
	// The record's own fsync stays: it is the only trace of a build no
	// host heard of, and once Append returns it must survive a crash as
	// every audit record does. It runs beside the manifest's (Record).
	l, err := audit.Open(layout.Builds(root), &audit.Options{LazyHead: true})
	if err != nil {
		audit.NoteLost(layout.Builds(root), ev, err)
		return err
	}
	defer l.Close()
	_, err = l.Append(ev)
	return err
}

// ManifestError is a previous run manifest that cannot be read; Record left
// it as it is. Err is manifest.Read's error (a *manifest.CorruptError when
// the file is not a manifest).
type ManifestError struct {
	Path string
	Err  error
}

func (e *ManifestError) Error() string { return e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

// InterruptedError is a Record stopped by its context (SIGINT, SIGTERM)
// while it was doing What. Cause is context.Cause.
type InterruptedError struct {
	What  string
	Cause error
	// Kept, when set, is the manifest left as it was.
	Kept string
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted while %s: %v", e.What, e.Cause)
}

func interrupted(ctx context.Context, what string) *InterruptedError {
	return &InterruptedError{What: what, Cause: context.Cause(ctx)}
}

// Interruptible runs f on a goroutine of its own and returns its result,
// or, as soon as ctx ends, an *InterruptedError saying what was
// interrupted. f is then abandoned: it runs on until it returns or the
// process exits, and undo, when not nil, is applied to what it returns if
// it succeeds after all (a lock it took is released).
func Interruptible[T any](ctx context.Context, what string, f func() (T, error), undo func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if undo != nil {
			go func() {
				if r := <-ch; r.err == nil {
					undo(r.v)
				}
			}()
		}
		var zero T
		return zero, interrupted(ctx, what)
	}
}
