package host

import (
	"context"

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
// identity.

// identity computes what the launch command will run now.
func (h *Host) identity() (*build.Identity, error) { return h.identityWith(nil) }

// identityWith is identity, calling seen with every tree it digested.
func (h *Host) identityWith(seen func(root string, opt build.TreeOptions, t build.Tree)) (*build.Identity, error) {
	spec := h.opts.Spec
	spec.Versions = func(d build.Digest) (string, bool) {
		v, ok := h.versions.Load(d)
		if !ok {
			return "", false
		}
		return v.(string), true
	}
	if !spec.Rehash {
		spec.Trees = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
			t, err := h.trees.Digest(root, opt, walk)
			if err == nil && seen != nil {
				seen(root, opt, t)
			}
			return t, err
		}
	}
	id, err := build.Compute(spec)
	if err == nil && id.Runtime.Version != "" {
		h.versions.Store(id.Runtime.Digest, id.Runtime.Version)
	}
	return id, err
}

// serveTrees answers the hook's trees request with the trees of the
// identity as they are now: from the watcher's memory when every tree it
// knows is current, else through identity, which walks what changed. A
// host that keeps no tree current answers none, and the hook walks them
// itself rather than wait for the host's walk.
func (h *Host) serveTrees(context.Context, notify.Peer, notify.Request) notify.Response {
	out := localapi.Trees{Trees: []localapi.Tree{}}
	if known, ok := h.trees.Current(); ok && !h.opts.Spec.Rehash {
		for _, k := range known {
			out.Trees = append(out.Trees, localapi.TreeOf(k.Root, k.Opt, k.Tree))
		}
	} else if h.trees.Watching() && !h.opts.Spec.Rehash {
		_, err := h.identityWith(func(root string, opt build.TreeOptions, t build.Tree) {
			out.Trees = append(out.Trees, localapi.TreeOf(root, opt, t))
		})
		if err != nil {
			return h.fail(notify.CodeInternal, err)
		}
	}
	return localapi.WithPayload(h.response(), localapi.TypeTrees, out)
}
