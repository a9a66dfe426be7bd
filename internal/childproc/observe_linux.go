package childproc

import (
	"crypto/sha256"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// Observe reads /proc/<pid>: the executable image (hashed through
// /proc/<pid>/exe, which works even when the file was deleted), the command
// line and the working directory. withDigest=false skips the hash.
func Observe(pid int, withDigest bool) *localapi.Observed {
	p := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(p + "/exe")
	if err != nil {
		return nil
	}
	o := &localapi.Observed{Exe: exe, At: time.Now()}
	if strings.HasSuffix(exe, " (deleted)") {
		o.ExeDeleted = true
	}
	if withDigest {
		o.ExeDigest = exeDigests.digest(p + "/exe")
	}
	if b, err := os.ReadFile(p + "/cmdline"); err == nil {
		o.Cmdline = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	o.Cwd, _ = os.Readlink(p + "/cwd")
	return o
}

// exeDigests are the digests of the executables Observe hashed, by the
// stat data of the file (/proc/PID/exe names the running image itself,
// even when deleted), so that a restart of the same server does not read
// and hash its executable again: node's is about 100 MB, over 60 ms of
// CPU at each restart. The rule is the stat caches' (package build): an
// entry stands for a file whose device, inode, size, mtime and ctime are
// the same and whose times are older than racyWindow before the entry
// was made. In memory only.
var exeDigests = exeCache{m: map[exeKey]exeEntry{}}

// racyWindow is build's: a file changed this close to its hashing may
// change again within the same timestamp. A variable only so that tests
// can shorten it.
var racyWindow = 2 * time.Second

// exeCacheMax bounds the entries kept; past it the cache starts over.
const exeCacheMax = 64

type exeKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
}

type exeEntry struct {
	stamp  int64 // when the hash began, ns
	digest build.Digest
}

type exeCache struct {
	mu sync.Mutex
	m  map[exeKey]exeEntry
}

// digest returns the SHA-256 digest of the file at path, from the cache
// when its stat data allows, else by reading it ("" when it cannot be
// read).
func (c *exeCache) digest(path string) build.Digest {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	k := exeKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && k.mtime < e.stamp-int64(racyWindow) && k.ctime < e.stamp-int64(racyWindow) {
		return e.digest
	}
	stamp := time.Now().UnixNano()
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return ""
	}
	d := build.NewDigest(h)
	if n == k.size {
		c.mu.Lock()
		if len(c.m) >= exeCacheMax {
			clear(c.m)
		}
		c.m[k] = exeEntry{stamp: stamp, digest: d}
		c.mu.Unlock()
	}
	return d
}
