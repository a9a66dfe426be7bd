package localapi

import (
	"slices"

	"github.com/mcpepoch/mcpepoch/build"
)

// TypeTrees asks a host for the code and dependency trees of its server's
// identity as they are now: a host that watches them (package treewatch)
// answers from memory what no file-system notification marked changed,
// and walks the rest. The answer (TypeTrees) carries [Trees] in Payload.
// The hook sends it before it hashes a build, so that it does not walk a
// tree a host already knows; the host's own identity never comes from the
// hook. A host that predates the request answers notify.CodeUnknownType,
// and the hook walks as before: the protocol version stays 1.
const TypeTrees = "trees"

// Trees is the answer to TypeTrees.
type Trees struct {
	// Trees holds the trees of the host's identity, in the order it
	// digested them; empty when the host keeps none current (no file
	// notifications on its platform).
	Trees []Tree `json:"trees"`
}

// Tree is one tree as build.TreeDigest digests it: its root and skip
// lists say which tree, the rest is what the digest gave.
type Tree struct {
	// Root is the absolute path build.Compute walks (as it names it, before
	// symbolic links are resolved).
	Root string `json:"root"`
	// SkipDirs and SkipFiles are the build.TreeOptions the tree was walked
	// with: a tree is the same only with the same lists.
	SkipDirs  []string `json:"skipDirs,omitempty"`
	SkipFiles []string `json:"skipFiles,omitempty"`
	// OnlyFiles is build.TreeOptions.OnlyFiles: part of which tree, too.
	OnlyFiles []string `json:"onlyFiles,omitempty"`
	// Digest, Files, Bytes, Symlinks and Native are build.Tree's Digest,
	// Files, Bytes, Symlinks and NativeAddons.
	Digest   build.Digest     `json:"digest"`
	Files    int              `json:"files"`
	Bytes    int64            `json:"bytes"`
	Symlinks int              `json:"symlinks,omitempty"`
	Native   []build.TreeFile `json:"native,omitempty"`
}

// TreeOf is the Tree for t, walked at root with opt.
func TreeOf(root string, opt build.TreeOptions, t build.Tree) Tree {
	return Tree{Root: root, SkipDirs: opt.SkipDirs, SkipFiles: opt.SkipFiles, OnlyFiles: opt.OnlyFiles, Digest: t.Digest,
		Files: t.Files, Bytes: t.Bytes, Symlinks: t.Symlinks, Native: t.NativeAddons}
}

// Is reports whether t is the tree at root walked with opt's skip lists
// (in any order).
func (t Tree) Is(root string, opt build.TreeOptions) bool {
	return t.Root == root && sameSet(t.SkipDirs, opt.SkipDirs) && sameSet(t.SkipFiles, opt.SkipFiles) && sameSet(t.OnlyFiles, opt.OnlyFiles)
}

// Build returns t as build.TreeDigest returns it. Root is the path walked,
// not resolved: build.Compute does not use it.
func (t Tree) Build() build.Tree {
	return build.Tree{Root: t.Root, Digest: t.Digest, Files: t.Files, Bytes: t.Bytes, Symlinks: t.Symlinks,
		NativeAddons: slices.Clone(t.Native)}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
