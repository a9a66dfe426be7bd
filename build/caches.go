package build

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"sync"
)

// Caches holds Compute's stat caches in memory only, for a process that
// must not take a digest from a file another process can write: the
// host. The on-disk caches of Spec.CacheDir are written by the hook and
// by anything else running as the same user, and a forged entry (a
// file's new stat data beside its old digest) would name code that no
// longer exists. Caches starts empty, so the first Compute through it
// hashes every file it reads; afterwards a digest is reused only for
// stat data that this process recorded itself, under the same rules as
// on disk (FileCache, StatCache: the racy-git window included).
//
// A Caches is safe for concurrent use: each Compute works on its own copy
// of the file cache and merges what it hashed back when it is done, and
// the walks of one tree take turns on that tree's StatCache. The zero
// value is not usable; use NewCaches.
type Caches struct {
	mu    sync.Mutex
	files map[string]fileCacheEntry
	trees map[string]*memTree
}

// memTree is the StatCache of one tree, walked by one TreeDigest at a
// time.
type memTree struct {
	mu    sync.Mutex
	cache *StatCache
}

// NewCaches returns empty in-memory caches.
func NewCaches() *Caches {
	return &Caches{files: map[string]fileCacheEntry{}, trees: map[string]*memTree{}}
}

// fileCache returns a FileCache holding a copy of c's entries, for one
// Compute. It is never saved: keep merges it back.
func (c *Caches) fileCache() *FileCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &FileCache{files: maps.Clone(c.files)}
}

// keep merges what one Compute hashed into c. Two Computes that hashed
// the same file both hold an entry valid for the stat data it names, so
// the one merged last may win.
func (c *Caches) keep(fc *FileCache) {
	if !fc.dirty {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(c.files, fc.files)
}

// walk is TreeDigest of the tree at full (absolute) for role, with the
// StatCache c keeps for that tree, one walk of it at a time.
func (c *Caches) walk(full string, role Role, opt TreeOptions) (Tree, error) {
	key := cacheName(full, role)
	c.mu.Lock()
	t := c.trees[key]
	if t == nil {
		t = &memTree{cache: NewStatCache()}
		c.trees[key] = t
	}
	c.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	opt.Cache = t.cache
	opt.Stamp = true // the host compares stamps after a launch (Touched)
	return TreeDigest(full, opt)
}

// cacheName is the name of the stat cache of the tree at full for role:
// the file's name in Spec.CacheDir, the key in Caches.
func cacheName(full string, role Role) string {
	sum := sha256.Sum256([]byte(full))
	prefix := "tree-"
	if role != RoleDeps {
		prefix = string(role) + "-"
	}
	return prefix + hex.EncodeToString(sum[:8]) + ".cache"
}
