package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// FileCache remembers the digests of single files — entry, lockfiles,
// runtime binary, wrappers — by their stat data, the way StatCache does for
// dependency trees: a 100 MB node binary need not be read on every build.
// An entry is used only when the file's (device, inode, size, mtime, ctime,
// mode) are unchanged and its mtime and ctime are more than 2 s older than
// the moment it was hashed (the racy-git rule, see StatCache). It is not
// safe for concurrent use; two processes sharing the file each write it
// whole (atomically), the last one wins.
//
// On disk: JSON {"v":1,"files":{"/abs/path":{…}}}. A file that does not
// parse is ignored (every file is hashed again) and replaced on Save.
type FileCache struct {
	path  string
	files map[string]fileCacheEntry
	dirty bool
}

type fileCacheEntry struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime"`
	Ctime  int64  `json:"ctime"`
	Mode   uint32 `json:"mode"`
	Stamp  int64  `json:"stamp"` // Unix ns just before the file was read
	Digest Digest `json:"digest"`
	// Go, once asked for, is the file's Go build info: reading it scans
	// the data of a binary that is not Go (a 100 MB node) to the end.
	Go *cachedGoInfo `json:"go,omitempty"`
}

// cachedGoInfo is a file's Go build info; Info is nil for a file that is
// not a Go binary.
type cachedGoInfo struct {
	Info *GoInfo `json:"info,omitempty"`
}

type fileCacheFormat struct {
	V     int                       `json:"v"`
	Files map[string]fileCacheEntry `json:"files"`
}

// maxCacheFile is the largest cache file LoadFileCache and LoadStatCache
// read, in bytes; a larger one (or one that is not a regular file) is
// ignored and rebuilt.
const maxCacheFile = 256 << 20

// LoadFileCache reads the cache at path. It always returns a usable cache;
// the error says why an existing file was ignored.
func LoadFileCache(path string) (*FileCache, error) {
	c := &FileCache{path: path, files: map[string]fileCacheEntry{}}
	b, err := safefile.ReadFileNoFollow(path, maxCacheFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	var f fileCacheFormat
	if err := json.Unmarshal(b, &f); err != nil || f.V != 1 || f.Files == nil {
		return c, fmt.Errorf("file cache %s ignored: not a version 1 cache", path)
	}
	c.files = f.Files
	return c, nil
}

// Digest returns the digest and size of the file at path (symlinks
// followed), from the cache when its stat data allows, else by reading it.
func (c *FileCache) Digest(path string) (Digest, int64, error) {
	full, k, e, ok, err := c.lookup(path)
	if err != nil {
		return "", 0, err
	}
	if ok {
		return e.Digest, e.Size, nil
	}
	stamp := time.Now().UnixNano()
	d, n, err := FileDigest(path)
	if err != nil {
		return "", 0, err
	}
	if n == k.size {
		c.files[full] = fileCacheEntry{Dev: k.dev, Ino: k.ino, Size: k.size, Mtime: k.mtime, Ctime: k.ctime,
			Mode: k.mode, Stamp: stamp, Digest: d}
		c.dirty = true
	}
	return d, n, nil
}

// lookup stats the file at path (symlinks followed) and returns its
// absolute path, its stat data and its entry, ok when the entry may stand
// for the file: same stat data, and both times older than the racy window
// before the entry was made.
func (c *FileCache) lookup(path string) (full string, k statKey, e fileCacheEntry, ok bool, err error) {
	if full, err = filepath.Abs(path); err != nil {
		return "", k, e, false, err
	}
	var st unix.Stat_t
	if err := unix.Stat(full, &st); err != nil {
		return "", k, e, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	k = statOf(&st).key
	e, ok = c.files[full]
	ok = ok && e.Dev == k.dev && e.Ino == k.ino && e.Size == k.size && e.Mtime == k.mtime &&
		e.Ctime == k.ctime && e.Mode == k.mode &&
		k.mtime < e.Stamp-int64(racyWindow) && k.ctime < e.Stamp-int64(racyWindow)
	return full, k, e, ok, nil
}

// goInfo returns the Go build info of the file at path (nil when it is
// not a Go binary), from the entry of a file whose digest the cache holds
// and vouches for, else read and kept in that entry. With a nil cache it
// is read.
func (c *FileCache) goInfo(path string) *GoInfo {
	if c == nil {
		return goInfo(path)
	}
	full, _, e, ok, err := c.lookup(path)
	if err != nil || !ok {
		return goInfo(path)
	}
	if e.Go != nil {
		return e.Go.Info
	}
	gi := goInfo(path)
	// Kept under the stat data read before it: had the file changed
	// meanwhile, its stat data no longer matches and the entry is unused.
	e.Go = &cachedGoInfo{Info: gi}
	c.files[full] = e
	c.dirty = true
	return gi
}

// Save writes the cache if it changed, atomically, creating its directory.
func (c *FileCache) Save() error {
	if !c.dirty {
		return nil
	}
	b, err := json.Marshal(fileCacheFormat{V: 1, Files: c.files})
	if err != nil {
		return err
	}
	if err := layout.MkdirAll(filepath.Dir(c.path)); err != nil {
		return err
	}
	if err := atomicfile.Replace(c.path, b, 0o600); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// hashFile is FileDigest through fc when there is one.
func hashFile(fc *FileCache, path string) (Digest, int64, error) {
	if fc == nil {
		return FileDigest(path)
	}
	return fc.Digest(path)
}
