package build

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// TreeFormat is the first line of every tree listing TreeDigest hashes. A
// change to the listing format changes this line, so digests of different
// formats never compare equal.
const TreeFormat = "mcpepoch-tree-v1"

// maxLinkHops bounds the symbolic links followed while resolving one link,
// as Linux does (MAXSYMLINKS).
const maxLinkHops = 40

// Tree is the digest of a resolved dependency tree, such as a node_modules
// directory or a virtual environment's site-packages, as TreeDigest computed
// it.
type Tree struct {
	// Root is the absolute path that was walked, with symbolic links in it
	// resolved.
	Root string
	// Digest is the SHA-256 of the tree listing (see TreeDigest).
	Digest Digest
	// Files is the number of regular files in the listing, Bytes their total
	// size in bytes. A file reached through a symbolic link that leaves the
	// tree counts at the link's path; a file inside the tree counts once,
	// however many links inside the tree point at it.
	Files int
	Bytes int64
	// Symlinks is the number of symbolic links in the listing.
	Symlinks int
	// NativeAddons lists the regular files whose name ends in ".node"
	// (Node-API native addons), sorted by path.
	NativeAddons []TreeFile
	// Hashed is the number of files whose content this call read; the
	// others' digests came from TreeOptions.Cache.
	Hashed int
	// Listing is the exact text the Digest was computed over, kept only when
	// TreeOptions.KeepListing is set.
	Listing []byte
	// Stamp, set when TreeOptions.Stamp is, is the SHA-256 of the device,
	// inode and ctime of every entry listed, as the walk saw them: no
	// input (the Digest is), but a file replaced and put back, whose
	// content and Digest are the same again, has another (the kernel sets
	// ctime at every write, rename and chmod, and a process cannot set it
	// back).
	Stamp Digest
}

// TreeFile is one regular file of a Tree.
type TreeFile struct {
	Path   string `json:"path"`   // slash-separated, relative to the tree root
	Digest Digest `json:"digest"` // of the file's content
	Size   int64  `json:"size"`   // in bytes
}

// TreeOptions tunes TreeDigest. The zero value hashes every file with the
// default number of workers and no cache.
type TreeOptions struct {
	// Cache, if not nil, supplies digests of files whose stat data has not
	// changed since it recorded them, and is updated to describe the tree
	// as walked. See StatCache for the rules.
	Cache *StatCache
	// Workers is the number of goroutines that read directories and hash
	// files. Zero or less means runtime.GOMAXPROCS(0), at most 8.
	Workers int
	// Rehash makes TreeDigest ignore what Cache holds and read every
	// directory and file; Cache is still updated.
	Rehash bool
	// SkipDirs names directories left out of the listing, and not read,
	// wherever they occur, and symbolic links by those names, which are
	// neither listed nor followed. Callers use it for caches a runtime
	// writes into the tree itself, such as Python's "__pycache__", and for
	// the dependency trees a code tree leaves to be hashed as such.
	SkipDirs []string
	// SkipFiles names regular files, by slash path relative to root, left
	// out of the listing: a code tree leaves out the entry, which is an
	// input of its own.
	SkipFiles []string
	// OnlyFiles, when not empty, lists the regular files the tree holds:
	// a file is listed only when its extension (".mjs", lower case; ""
	// for a file with none) or its name ("package.json") is among them. Sockets, named pipes and devices
	// and the directories that hold no listed entry are not listed then
	// either. A project walked as the code of a script entry lists the
	// files its runtime loads as code, not the data (nor the directories
	// of data, nor a socket) a server or a tool writes beside it.
	OnlyFiles []string
	// KeepListing makes TreeDigest return the listing in Tree.Listing.
	KeepListing bool
	// Stamp makes TreeDigest set Tree.Stamp. It changes no listing and no
	// cache key.
	Stamp bool
}

// TreeDigest walks the directory root and returns the digest of its listing.
// The model is the "h1:" directory hash of Go modules
// (golang.org/x/mod/sumdb/dirhash), extended with entry types and the
// execute bit, because a runtime loads what is on disk, not what a lockfile
// intended.
//
// The listing is UTF-8-agnostic text: the line
//
//	mcpepoch-tree-v1
//
// followed by one line per entry, each ending in "\n", sorted by path in byte
// order (a symbolic link's line comes before the "f" or "d" line for the same
// path, see below):
//
//	f <x> sha256:<64 hex> <path>   regular file: SHA-256 of its content
//	l - <target> <path>            symbolic link: its target as readlink returns it
//	d - - <path>                   directory with no listed entry in it
//	o - - <path>                   socket, named pipe or device (content not read)
//
// <x> is "x" if any of the three execute permission bits is set and "-"
// otherwise; the other permission bits, owners and times are not listed.
// <target> is always written as a Go double-quoted string (strconv.Quote).
// <path> is slash-separated and relative to root; it is written as is unless
// it contains a byte below 0x20 or 0x7f or begins with a double quote, in
// which case it too is written as a Go double-quoted string. Directories
// are implied by the entries below them; an empty directory is listed
// because it can change module resolution (an empty node_modules/x shadows
// x further up), except in a tree of opt.OnlyFiles (a project walked as
// code), where a directory of data would be listed too.
//
// Symbolic links are listed, never silently followed:
//   - A link whose target resolves inside root is only listed: the bytes it
//     reaches are listed where they really are (pnpm's node_modules/.pnpm
//     layout), so nothing is counted twice. Retargeting a link changes the
//     digest.
//   - A link that resolves outside root (a workspace package) is listed and
//     then, because the runtime loads those bytes too, the file it reaches is
//     listed under the link's path, or the directory it reaches is walked as
//     if it were at the link's path. Inside such a directory the same rules
//     apply, with the directory counting as inside. A link that reaches a
//     directory containing root or any directory being walked through a link
//     is only listed, so link cycles end.
//   - A link that cannot be resolved (broken, or more than 40 links deep) is
//     only listed; that is not an error.
//
// A root that is itself a symbolic link is resolved first. The digest is
// the SHA-256 of the listing, as a Digest.
//
// Directories whose name is in opt.SkipDirs are left out.
//
// Directories are read and files hashed by opt.Workers goroutines, each
// reusing one buffer. With opt.Cache, a file whose stat data matches a
// trusted cache entry is not read, nor is a directory whose stat data
// matches (see StatCache); every entry is still lstat'ed, which is the cost
// of a warm call. Errors are *fs.PathError values naming the absolute path
// that failed; a tree that changes while it is walked may give an error or
// a digest of a mix of states, which the next call corrects.
func TreeDigest(root string, opt TreeOptions) (Tree, error) {
	start := time.Now()
	real, rootStat, err := realRoot(root)
	if err != nil {
		return Tree{}, err
	}
	skipKey := skipKey(opt.SkipDirs, opt.SkipFiles)
	if len(opt.OnlyFiles) > 0 {
		// "2": such a tree lists no empty directory and no socket (a
		// cache of a tree listed otherwise is not used).
		o := slices.Clone(opt.OnlyFiles)
		slices.Sort(o)
		skipKey += "\x00\x00\x002\x00" + strings.Join(slices.Compact(o), "\x00")
	}
	c := opt.Cache
	w := newTreeWalk(opt, real, skipKey)
	ws := w.walk(dirTask{real: real, st: rootStat, roots: []string{real}})
	if w.err != nil {
		return Tree{}, w.err
	}

	dirs, hashed, reused := w.collect(ws)
	t := Tree{Root: real, Hashed: hashed}
	if opt.Stamp {
		t.Stamp = stampDirs(dirs)
	}
	unchanged := reused && t.Hashed == 0 && c.summary != nil
	if unchanged && !opt.KeepListing {
		s := c.summary
		t.Digest = sumDigest(s.digest)
		t.Files, t.Bytes, t.Symlinks = s.files, s.bytes, s.symlinks
		t.NativeAddons = slices.Clone(s.natives)
		return t, nil
	}
	sum := t.list(dirs, opt.KeepListing, len(opt.OnlyFiles) == 0)
	if c != nil && !unchanged {
		c.root, c.skip, c.stamp, c.dirs, c.dirty = real, skipKey, start.UnixNano(), dirs, true
		c.summary = &treeSummary{digest: sum, files: t.Files, bytes: t.Bytes, symlinks: t.Symlinks, natives: slices.Clone(t.NativeAddons)}
	}
	return t, nil
}

// newTreeWalk returns the shared state of a walk of the real root with the
// options opt, whose skip lists have the StatCache form skipKey. The cached
// directories are used only when the cache describes this root with the
// same skip lists and opt.Rehash is not set.
func newTreeWalk(opt TreeOptions, real, skipKey string) *treeWalk {
	w := &treeWalk{opt: opt}
	w.cond = sync.NewCond(&w.mu)
	if len(opt.SkipDirs) > 0 {
		w.skip = make(map[string]bool, len(opt.SkipDirs))
		for _, n := range opt.SkipDirs {
			w.skip[n] = true
		}
	}
	c := opt.Cache
	if len(opt.SkipFiles) > 0 {
		w.skipFiles = make(map[string]bool, len(opt.SkipFiles))
		for _, n := range opt.SkipFiles {
			w.skipFiles[n] = true
		}
	}
	if len(opt.OnlyFiles) > 0 {
		w.only = make(map[string]bool, len(opt.OnlyFiles))
		for _, n := range opt.OnlyFiles {
			w.only[n] = true
		}
	}
	if c != nil && c.root == real && c.skip == skipKey && !opt.Rehash {
		w.old = c.dirs
		w.racyFrom = c.stamp - int64(racyWindow)
	}
	return w
}

// walk walks the tree from the directory first with opt.Workers workers,
// the calling goroutine being one of them, and returns the workers once
// all are done; w.err then holds the first error.
func (w *treeWalk) walk(first dirTask) []*treeWorker {
	workers := w.opt.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	w.queue = []dirTask{first}
	ws := make([]*treeWorker, workers)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = &treeWorker{w: w, h: sha256.New()}
		if i > 0 {
			wg.Add(1)
			go func() { defer wg.Done(); ws[i].run() }()
		}
	}
	ws[0].run()
	wg.Wait()
	return ws
}

// collect gathers what the workers ws recorded: the directory records of
// the tree as walked (the cached map itself when every record is the cached
// one), the number of files read, and whether the cached records stand
// unchanged.
func (w *treeWalk) collect(ws []*treeWorker) (dirs map[string]*dirRecord, hashed int, reused bool) {
	n := 0
	same := true
	for _, wk := range ws {
		hashed += wk.hashed
		n += len(wk.out)
		for _, r := range wk.out {
			same = same && r.same
		}
	}
	dirs = w.old
	if !same || n != len(w.old) {
		dirs = make(map[string]*dirRecord, n)
		for _, wk := range ws {
			for _, r := range wk.out {
				dirs[r.rel] = r.rec
			}
		}
	}
	return dirs, hashed, w.old != nil && same && n == len(w.old)
}

// list sets t's Digest, counts and NativeAddons from the listing of dirs
// (with the directories holding no listed entry when empties is set), and
// t.Listing to the listing if keep is set. It returns the SHA-256 of the
// listing.
func (t *Tree) list(dirs map[string]*dirRecord, keep, empties bool) [sha256.Size]byte {
	lines := listDirs(dirs, empties)
	var sum [sha256.Size]byte
	sum, t.Listing = writeListing(lines, keep)
	t.Digest = sumDigest(sum)
	for _, e := range lines {
		switch e.kind {
		case 'f':
			t.Files++
			t.Bytes += e.size
			if strings.HasSuffix(e.path, ".node") {
				t.NativeAddons = append(t.NativeAddons, TreeFile{Path: e.path, Digest: sumDigest(e.sum), Size: e.size})
			}
		case 'l':
			t.Symlinks++
		}
	}
	return sum
}

// skipKey is the form of TreeOptions.SkipDirs and SkipFiles a StatCache
// records.
func skipKey(names, files []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	key := strings.Join(slices.Compact(s), "\x00")
	if len(files) > 0 {
		f := slices.Clone(files)
		slices.Sort(f)
		key += "\x00\x00" + strings.Join(slices.Compact(f), "\x00")
	}
	return key
}

// dirTask is a directory to walk.
type dirTask struct {
	rel   string   // slash path in the tree; "" for the root
	real  string   // absolute path with no symbolic links in it
	st    fileStat // its lstat data
	roots []string // real paths counting as inside: the root, then each directory entered through a link
}

// dirResult is what walking one directory gave.
type dirResult struct {
	rel  string
	rec  *dirRecord
	same bool // rec is the cached record, unchanged and with no entry read again
}

// treeWalk is the state the workers share.
type treeWalk struct {
	opt  TreeOptions
	skip map[string]bool
	// skipFiles holds TreeOptions.SkipFiles.
	skipFiles map[string]bool
	only      map[string]bool       // opt.OnlyFiles; nil: every file
	old       map[string]*dirRecord // cached directories, or nil
	racyFrom  int64                 // stat data changed at or after this (Unix ns) is not trusted

	mu    sync.Mutex
	cond  *sync.Cond
	queue []dirTask
	busy  int
	err   error
}

// trusted reports whether cached stat data old may stand for st.
func (w *treeWalk) trusted(old statKey, st fileStat) bool {
	return old == st.key && old.mtime < w.racyFrom && old.ctime < w.racyFrom
}

// stampDirs is Tree.Stamp of the directory records dirs: the SHA-256 of
// one line per regular file and symbolic link, sorted, with its device,
// inode and ctime (and those of the file outside a link reaches).
// Directories are left out: a file made and removed in one (a server's
// temporary file, an editor's) sets its ctime, and changes no code.
func stampDirs(dirs map[string]*dirRecord) Digest {
	rels := slices.Sorted(maps.Keys(dirs))
	h := sha256.New()
	var b []byte
	for _, rel := range rels {
		r := dirs[rel]
		for i := range r.kids {
			k := &r.kids[i]
			if k.kind != 'f' && k.kind != 'l' {
				continue
			}
			b = fmt.Appendf(b[:0], "%c %d %d %d %s/%s\n", k.kind, k.key.dev, k.key.ino, k.key.ctime, rel, k.name)
			if k.ext != nil {
				b = fmt.Appendf(b[:len(b)-1], " -> %d %d %d\n", k.ext.key.dev, k.ext.key.ino, k.ext.key.ctime)
			}
			h.Write(b)
		}
	}
	return NewDigest(h)
}
