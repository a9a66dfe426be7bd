package treewatch

import "github.com/mcpepoch/mcpepoch/build"

// Stats returns what w did so far.
func (w *Watcher) Stats() Stats {
	if w == nil {
		return Stats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Digest returns the tree at root (absolute, as the caller names it) with
// the skip lists of opt: the Tree of the last walk when no notification
// named a path in it since, else what walk returns. walk must be what the
// caller does without a watcher (build.TreeDigest of root with opt, and its
// stat cache); its errors are returned as they are and nothing is kept.
// The Tree returned is the caller's (its slices are copies).
func (w *Watcher) Digest(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
	return w.digest(root, opt, walk, true)
}
