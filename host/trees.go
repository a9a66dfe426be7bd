package host

import (
	"context"
	"sync"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// The host keeps the code and dependency trees of its server's identity
// current from file-system notifications (h.trees, package treewatch):
// identity() walks only a tree a notification marked changed, so a build
// signal is answered without walking what nothing touched. The hook asks
// for the same trees before it hashes a build (serveTrees), so that it
// does not walk them either. Nothing the hook says enters the host's
// identity, and neither does the hook's on-disk stat cache: the host's
// caches live in its memory (spec).

// identity computes what the launch command will run now.
func (h *Host) identity() (*build.Identity, error) {
	spec := h.spec()
	if !spec.Rehash {
		spec.Trees = h.trees.Synced() // one wait for the kernel's queue, however many trees
	}
	id, err := build.Compute(spec)
	if err == nil && id.Runtime.Version != "" {
		h.versions.Store(id.Runtime.Digest, id.Runtime.Version)
	}
	return id, err
}

// identityAt is identity with the tree watcher's Generation read before
// it: a later Generation that differs says a tree changed since the
// identity was computed (unverifiedLocked).
func (h *Host) identityAt() (*build.Identity, uint64, error) {
	gen := h.trees.Generation()
	id, err := h.identity()
	return id, gen, err
}

// identityAhead starts computing the identity on a goroutine of its own,
// at once, and returns the wait for its result, which may be called again:
// a build signal's identity is hashed while the signal is recorded and
// mcpepoch.toml re-read (onBuild), which need no part of it. Files the
// build wrote are in place before its signal is sent, so the identity is
// of the build signalled.
func (h *Host) identityAhead() func() (*build.Identity, error) {
	type result struct {
		id  *build.Identity
		err error
	}
	ch := make(chan result, 1)
	go func() {
		id, err := h.identity()
		ch <- result{id, err}
	}()
	return sync.OnceValues(func() (*build.Identity, error) {
		r := <-ch
		return r.id, r.err
	})
}

// spec is the identity's build.Spec, with the runtime versions the host
// has seen (a restart does not run node --version again) and the host's
// own in-memory stat caches instead of the on-disk ones: a digest the
// host uses comes from content it read itself, never from a cache file
// another process of the user could have forged (build.Caches).
func (h *Host) spec() build.Spec {
	spec := h.opts.Spec
	spec.CacheDir, spec.Caches = "", h.caches
	spec.Versions = func(d build.Digest) (string, bool) {
		v, ok := h.versions.Load(d)
		if !ok {
			return "", false
		}
		return v.(string), true
	}
	return spec
}

// serveTrees answers the hook's trees request with the trees of the
// identity the host keeps current, as they are now: from the watcher's
// memory when every one is current, else through the identity's inputs,
// walking a watched tree a notification named. A tree the host walks at
// every build (not watched) is left out, and so is every tree of a host
// that keeps none current: the hook walks them itself rather than wait
// for the host to walk them.
func (h *Host) serveTrees(context.Context, notify.Peer, notify.Request) notify.Response {
	out := localapi.Trees{Trees: []localapi.Tree{}}
	if h.opts.Spec.Rehash || !h.trees.Watching() {
		return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
	}
	if known, ok := h.trees.Current(); ok {
		for _, k := range known {
			out.Trees = append(out.Trees, localapi.TreeOf(k.Root, k.Opt, k.Tree))
		}
		return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
	}
	// Compute names the trees; only watched ones are digested and told.
	spec := h.spec()
	digest := h.trees.Synced()
	spec.Trees = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
		if !h.trees.Watched(root, opt) {
			return build.Tree{}, nil // not told: left to the hook
		}
		t, err := digest(root, opt, walk)
		if err == nil {
			out.Trees = append(out.Trees, localapi.TreeOf(root, opt, t))
		}
		return t, err
	}
	if _, err := build.Compute(spec); err != nil {
		return h.fail(notify.CodeInternal, err)
	}
	return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
}
