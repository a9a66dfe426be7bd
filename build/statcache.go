package build

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// ErrStatCacheCorrupt is wrapped by the error LoadStatCache returns for a
// cache file that fails its checks (wrong header or version, truncated,
// checksum mismatch, malformed record).
var ErrStatCacheCorrupt = errors.New("corrupt stat cache")

// statCacheMagic is the first line of a stat cache file; it carries the
// format version. Version 1 ended in a SHA-256 of the file and had no
// entry total, version 2 ended in a CRC-32C; a file of another version is
// not trusted (LoadStatCache).
const statCacheMagic = "mcpepoch-statcache-v3\n"

// statCacheSumSize is the size of the checksum that ends a cache file.
const statCacheSumSize = crc32.Size

// statCacheSum is the checksum of a cache file's body: CRC-32 (IEEE),
// which the CPU computes (PCLMULQDQ, ARMv8 CRC) at several GB/s and whose
// tables cost 27 µs to set up where CRC-32C's took 0.25 ms, in a process
// that loads a few caches and exits. It catches a torn or damaged file,
// every burst error up to 32 bits and all but one in 2^32 others; it is
// not meant to stop a forger, and neither was the SHA-256 of version 1,
// which anyone able to write the file could recompute. The cache is a
// hint: a file it vouches for that its stat data no longer matches is
// read again (StatCache).
func statCacheSum(body []byte) [statCacheSumSize]byte {
	var s [statCacheSumSize]byte
	binary.LittleEndian.PutUint32(s[:], crc32.ChecksumIEEE(body))
	return s
}

// racyWindow is how close to the start of the walk that recorded an entry a
// file's mtime or ctime may be before the entry is not trusted. It covers
// file systems with one-second (HFS+, ext3) and two-second (FAT) time
// granularity and kernels that stamp files from a coarse clock. It is a
// variable only so that the package's tests, which must wait for files to
// leave the window, can shorten it (statcache_window_test.go); nothing else
// changes it.
var racyWindow = 2 * time.Second

// statKeySize is the encoded size of a statKey: dev, ino, size, mtime,
// ctime (8 bytes each) and mode (4).
const statKeySize = 5*8 + 4

// StatCache remembers what a walk of one tree saw, so that the next
// TreeDigest of the unchanged tree reads no file and no directory, the way
// git's index (and its untracked cache) lets "git status" skip unchanged
// files. It holds, per directory of the tree (by slash path), the
// directory's stat data and, per entry, the entry's stat data and its
// content digest (regular file) or target (symbolic link). Stat data is
// (device, inode, size, mtime in ns, ctime in ns, st_mode).
//
// A regular file's cached digest is used when its stat data is unchanged.
// ctime cannot be set by a user, so content rewritten with its mtime put
// back (touch -r, tar, rsync -t) still misses the cache. A directory's
// cached list of names is used, and the directory is not read, when its
// stat data is unchanged: creating, removing or renaming an entry changes
// the directory's mtime and ctime; every entry is still lstat'ed.
//
// Racy entries: a file changed in the same clock tick as the stat that
// recorded it can keep its size, mtime and ctime, so stat data (of a file,
// a link or a directory) is trusted only if its mtime and ctime are both
// more than 2 seconds before the start of the TreeDigest call that recorded
// it; other entries are read again and recorded again, so a file is read
// by at most two calls after it last changed. This assumes the file system stamps files
// from a clock within that margin of this machine's, as local file systems
// do.
//
// A StatCache belongs to one tree root and one TreeOptions.SkipDirs:
// TreeDigest ignores and replaces the entries of a cache last used with
// another. It is not safe for concurrent use. The zero value is not
// usable; use NewStatCache or LoadStatCache.
type StatCache struct {
	root    string // real path of the tree the entries describe
	skip    string // TreeOptions.SkipDirs, sorted and joined with NUL
	stamp   int64  // Unix ns at the start of the walk that recorded the entries
	dirs    map[string]*dirRecord
	summary *treeSummary // the Tree of that walk
	dirty   bool
}

// statKey is the stat data entries are keyed by.
type statKey struct {
	dev, ino           uint64
	size, mtime, ctime int64
	mode               uint32
}

// dirRecord is what a walk saw in one directory.
type dirRecord struct {
	key  statKey     // of the directory itself
	kids []kidRecord // its entries, sorted by name, SkipDirs left out
}

// kidRecord is one entry of a directory.
type kidRecord struct {
	name    string
	kind    byte // 'f', 'd', 'l' or 'o'
	descend bool // link to a directory outside, walked under the link's path
	key     statKey
	sum     [sha256.Size]byte // regular file: content digest
	target  string            // link: target
	ext     *extFile          // link to a regular file outside
}

// extFile is the regular file outside the tree a link reaches.
type extFile struct {
	key statKey
	sum [sha256.Size]byte
}

func (k *kidRecord) equal(o *kidRecord) bool {
	if k.name != o.name || k.kind != o.kind || k.descend != o.descend || k.key != o.key ||
		k.sum != o.sum || k.target != o.target || (k.ext == nil) != (o.ext == nil) {
		return false
	}
	return k.ext == nil || *k.ext == *o.ext
}

// treeSummary is the part of a Tree a cache keeps, so an unchanged tree's
// listing need not be rebuilt.
type treeSummary struct {
	digest   [sha256.Size]byte
	files    int
	bytes    int64
	symlinks int
	natives  []TreeFile
}

// NewStatCache returns an empty cache.
func NewStatCache() *StatCache {
	return &StatCache{dirs: map[string]*dirRecord{}}
}

// Len returns the number of regular files the cache has digests for.
func (c *StatCache) Len() int {
	n := 0
	for _, d := range c.dirs {
		for i := range d.kids {
			if d.kids[i].kind == 'f' || d.kids[i].ext != nil {
				n++
			}
		}
	}
	return n
}

// Dirty reports whether TreeDigest changed the cache since it was created,
// loaded or saved, that is whether Save has anything new to write. A walk
// of an unchanged tree whose entries are all trusted leaves it clean.
func (c *StatCache) Dirty() bool { return c.dirty }

// LoadStatCache reads the cache file written by Save at path. It always
// returns a usable cache: an empty one if the file does not exist (and a nil
// error), or if the file cannot be read or fails its checks, together with
// an error naming path; a corrupt file's error wraps ErrStatCacheCorrupt.
// Callers report the error and go on: TreeDigest then reads every file.
//
// The file is binary, integers little-endian or uvarint, strings a uvarint
// length and bytes: the line "mcpepoch-statcache-v3\n"; the stamp (int64
// Unix ns); the root; the skipped directory names joined with NUL; a
// summary flag byte and, if 1, the tree digest (32 bytes), file count, byte
// count, link count and native addons (count, then path, digest, size
// each); the directory count and the total of their entry counts; per
// directory its path, stat data and entry count; per entry its name, kind
// byte, flags byte (1 walked link, 2 link to an outside file), stat data,
// then the digest (kind f) or target (kind l) and, with flag 2, the
// outside file's stat data and digest; and last the CRC-32 (IEEE) of
// everything before it, 4 bytes (statCacheSum). Stat data is dev, ino,
// size, mtime, ctime as 64-bit and mode as 32-bit integers. A file of
// another version, an older one included, fails its checks.
func LoadStatCache(path string) (*StatCache, error) {
	data, err := safefile.ReadFileNoFollow(path, maxCacheFile)
	if errors.Is(err, fs.ErrNotExist) {
		return NewStatCache(), nil
	}
	if err != nil {
		return NewStatCache(), fmt.Errorf("load stat cache: %w", err)
	}
	c, err := decodeStatCache(data)
	if err != nil {
		return NewStatCache(), fmt.Errorf("stat cache %s: %w: %v", path, ErrStatCacheCorrupt, err)
	}
	return c, nil
}

// cacheReader decodes the body of a cache file; the first error sticks.
type cacheReader struct {
	b   []byte
	s   string // the same bytes, so strings need no copy each
	off int
	err error
}

func (r *cacheReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, r.off)
	}
}

func (r *cacheReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		r.fail("bad " + what)
		return 0
	}
	r.off += k
	return v
}

func (r *cacheReader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(what + " truncated")
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *cacheReader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail(what + " truncated")
		return ""
	}
	v := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}

func (r *cacheReader) key() statKey {
	b := r.bytes(statKeySize, "stat data")
	if b == nil {
		return statKey{}
	}
	le := binary.LittleEndian
	return statKey{
		dev:   le.Uint64(b[0:]),
		ino:   le.Uint64(b[8:]),
		size:  int64(le.Uint64(b[16:])),
		mtime: int64(le.Uint64(b[24:])),
		ctime: int64(le.Uint64(b[32:])),
		mode:  le.Uint32(b[40:]),
	}
}

func (r *cacheReader) sum() (s [sha256.Size]byte) {
	copy(s[:], r.bytes(sha256.Size, "digest"))
	return s
}

// count reads a count of items of at least min bytes each.
func (r *cacheReader) count(min int, what string) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(min) {
		r.fail("bad " + what)
		return 0
	}
	return int(n)
}

// summary reads a tree's summary: digest, counts and native addons.
func (r *cacheReader) summary() *treeSummary {
	s := &treeSummary{digest: r.sum()}
	s.files = int(r.uvarint("file count"))
	s.bytes = int64(r.uvarint("byte count"))
	s.symlinks = int(r.uvarint("link count"))
	n := r.count(1+sha256.Size+1, "native addon count")
	for range n {
		p := r.str("native addon path")
		d := sumDigest(r.sum())
		s.natives = append(s.natives, TreeFile{Path: p, Digest: d, Size: int64(r.uvarint("native addon size"))})
	}
	return s
}

// kid reads one directory entry into k: name, kind and flags, stat key,
// then what its kind carries. It reports false when the bytes ran out
// before the kind (r.err says why).
func (r *cacheReader) kid(k *kidRecord) bool {
	k.name = r.str("entry name")
	kf := r.bytes(2, "entry kind")
	if kf == nil {
		return false
	}
	k.kind, k.descend = kf[0], kf[1]&1 != 0
	k.key = r.key()
	switch k.kind {
	case 'f':
		k.sum = r.sum()
	case 'l':
		k.target = r.str("link target")
	case 'd', 'o':
	default:
		r.fail("bad entry kind")
	}
	if kf[1]&2 != 0 {
		k.ext = &extFile{key: r.key(), sum: r.sum()}
	}
	return true
}

// decodeStatCache decodes a cache file's bytes. Its strings point into
// data, which must not change afterwards, and all the entries share one
// array: a warm hook's load makes a few allocations, not one per entry.
func decodeStatCache(data []byte) (*StatCache, error) {
	if len(data) < len(statCacheMagic)+8+statCacheSumSize {
		return nil, errors.New("truncated")
	}
	if !bytes.HasPrefix(data, []byte(statCacheMagic)) {
		if bytes.HasPrefix(data, []byte("mcpepoch-statcache-")) {
			return nil, errors.New("unsupported version")
		}
		return nil, errors.New("bad header")
	}
	body, sum := data[:len(data)-statCacheSumSize], data[len(data)-statCacheSumSize:]
	if want := statCacheSum(body); !bytes.Equal(sum, want[:]) {
		return nil, errors.New("checksum mismatch")
	}
	// The strings are views of body, not copies: nothing writes to data
	// once read (LoadStatCache), so they cannot change under the cache.
	r := &cacheReader{b: body, s: unsafe.String(unsafe.SliceData(body), len(body)), off: len(statCacheMagic)}
	c := &StatCache{stamp: int64(binary.LittleEndian.Uint64(r.bytes(8, "stamp")))}
	c.root = r.str("root")
	c.skip = r.str("skipped names")
	if flag := r.bytes(1, "summary flag"); flag != nil && flag[0] == 1 {
		c.summary = r.summary()
	}
	nd := r.count(1+statKeySize+1, "directory count")
	total := r.count(1+2+statKeySize, "entry total")
	c.dirs = make(map[string]*dirRecord, nd)
	recs := make([]dirRecord, nd)
	kids := make([]kidRecord, total)
	for di := range recs {
		rel := r.str("directory path")
		d := &recs[di]
		d.key = r.key()
		nk := r.count(1+2+statKeySize, "entry count")
		if nk > len(kids) {
			r.fail("entry count past the total")
			break
		}
		// Capped, so that no append to one directory's entries can
		// write over the next one's.
		d.kids, kids = kids[:nk:nk], kids[nk:]
		for i := range d.kids {
			k := &d.kids[i]
			if !r.kid(k) {
				break
			}
			if i > 0 && k.name <= d.kids[i-1].name {
				r.fail("entries out of order")
			}
		}
		if _, dup := c.dirs[rel]; dup {
			r.fail("duplicate directory")
		}
		c.dirs[rel] = d
	}
	if r.err == nil && len(kids) != 0 {
		r.fail("entry total not matched")
	}
	if r.err == nil && r.off != len(body) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// Save writes the cache to path atomically (a temporary file in the same
// directory, fsync, rename), creating the directory if needed, and marks the
// cache clean.
func (c *StatCache) Save(path string) error {
	if err := layout.MkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("save stat cache: %w", err)
	}
	if err := atomicfile.Replace(path, c.encode(), 0o600); err != nil {
		return fmt.Errorf("save stat cache: %w", err)
	}
	c.dirty = false
	return nil
}

func (c *StatCache) encode() []byte {
	rels := make([]string, 0, len(c.dirs))
	size := 256 + len(c.root) + len(c.skip)
	total := 0
	for rel, d := range c.dirs {
		rels = append(rels, rel)
		total += len(d.kids)
		size += 16 + len(rel) + statKeySize + len(d.kids)*(16+statKeySize+sha256.Size)
	}
	slices.SortFunc(rels, strings.Compare)
	le := binary.LittleEndian
	b := make([]byte, 0, size)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	key := func(k statKey) {
		b = le.AppendUint64(b, k.dev)
		b = le.AppendUint64(b, k.ino)
		b = le.AppendUint64(b, uint64(k.size))
		b = le.AppendUint64(b, uint64(k.mtime))
		b = le.AppendUint64(b, uint64(k.ctime))
		b = le.AppendUint32(b, k.mode)
	}
	b = append(b, statCacheMagic...)
	b = le.AppendUint64(b, uint64(c.stamp))
	str(c.root)
	str(c.skip)
	if s := c.summary; s != nil {
		b = append(b, 1)
		b = append(b, s.digest[:]...)
		b = binary.AppendUvarint(b, uint64(s.files))
		b = binary.AppendUvarint(b, uint64(s.bytes))
		b = binary.AppendUvarint(b, uint64(s.symlinks))
		b = binary.AppendUvarint(b, uint64(len(s.natives)))
		for _, n := range s.natives {
			str(n.Path)
			raw, _ := digestSum(n.Digest)
			b = append(b, raw[:]...)
			b = binary.AppendUvarint(b, uint64(n.Size))
		}
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(rels)))
	b = binary.AppendUvarint(b, uint64(total))
	for _, rel := range rels {
		d := c.dirs[rel]
		str(rel)
		key(d.key)
		b = binary.AppendUvarint(b, uint64(len(d.kids)))
		for i := range d.kids {
			k := &d.kids[i]
			str(k.name)
			var flags byte
			if k.descend {
				flags |= 1
			}
			if k.ext != nil {
				flags |= 2
			}
			b = append(b, k.kind, flags)
			key(k.key)
			switch k.kind {
			case 'f':
				b = append(b, k.sum[:]...)
			case 'l':
				str(k.target)
			}
			if k.ext != nil {
				key(k.ext.key)
				b = append(b, k.ext.sum[:]...)
			}
		}
	}
	sum := statCacheSum(b)
	return append(b, sum[:]...)
}
