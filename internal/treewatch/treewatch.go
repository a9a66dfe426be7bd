// Package treewatch keeps the digests of directory trees (code trees,
// dependency trees: build.TreeDigest) current from file-system
// notifications, so that a host can say what a tree holds now without
// walking a tree nothing touched since its last walk.
//
// A [Watcher] is asked for a tree through [Watcher.Digest], with the walk
// the caller would otherwise do. The first call walks and starts watching
// every directory of the tree (and the tree root's parent, for a root that
// is removed or replaced); later calls return the same Tree until a
// notification names a path in it, and walk again after one. A walk is
// always the stat walk with the caller's stat cache, so a tree marked
// changed costs what it cost without a watcher; one untouched costs nothing.
//
// Before answering, Digest makes sure every notification the kernel queued
// before the call has been handled: it reads, itself and without waiting,
// whatever the inotify instance holds (the kernel queues a file's event
// before the call that changed the file returns), under the lock the event
// loop reads under too. A build that wrote a file and then ran the hook is
// therefore always seen, and when nothing changed the answer costs one
// read(2) that finds the queue empty.
//
// A tree is walked on every call, never trusted to notifications, when:
// the platform has no suitable notifications (see below); its file system
// is not one whose local changes inotify reports (network and FUSE file
// systems are not: changes made elsewhere send nothing); a directory in it
// is another mount; it holds a symbolic link that resolves, or would
// resolve, outside it (TreeDigest walks what such a link reaches); a watch
// cannot be added (the user's inotify watch limit,
// /proc/sys/fs/inotify/max_user_watches); or its root path goes through a
// symbolic link. After the kernel's event queue overflowed (IN_Q_OVERFLOW)
// every tree is walked once and its directories watched anew, and so after
// the mount table changed (a mount over a watched file sends nothing:
// mounts.go).
//
// Platforms: on Linux, inotify (inotify_linux.go). On macOS kqueue needs
// one open descriptor per watched file, which a
// dependency tree of thousands of files would exhaust, and FSEvents needs
// cgo: there, and on every other platform, Digest always walks (the stat
// walk is the honest fallback: correct, and as fast as without a watcher).
package treewatch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mcpepoch/mcpepoch/build"
)

// barrierPrefix started the name of the private directory in the
// temporary directory (barrierPrefix<pid>-<random>) where a Watcher of an
// earlier version made a file to wait for its notification; New still
// removes those a killed host left behind (sweepBarriers).
const barrierPrefix = "mcpepoch-watch-"

// Watcher keeps tree digests current. The zero Watcher is not usable; a
// nil *Watcher walks on every call. Its methods are safe for concurrent use.
type Watcher struct {
	in      *inotify // nil when not watching at all; read under mu
	logf    func(string, ...any)
	done    chan struct{}
	changes chan struct{} // Changes; holds at most one signal
	gen     uint64        // Generation; read and written under mu

	mu     sync.Mutex
	trees  map[string]*entry
	stats  Stats
	closed bool
	paused bool // (tests) the event loop leaves the queue to fill

	mounts     string // the mount table at the last sync (mounts.go)
	mountsRead bool
	mountWatch mountWatch // says when the mount table needs reading again

	// maxWatches (tests), when positive, makes adding a watch beyond that
	// many fail as the kernel's limit does (ENOSPC); watches counts them.
	maxWatches, watches int

	// pause (tests) stops the event loop reading until the channel it
	// receives is closed, so that a test can make the kernel's queue
	// overflow.
	pause chan chan struct{}
}

// Stats counts what a Watcher did, for tests and benchmarks.
type Stats struct {
	Walks     int // trees walked by Digest
	Answered  int // Digest calls answered without a walk
	Overflows int // kernel event queue overflows seen
	Syncs     int // waits for the kernel's queue (Digest, Synced, Current)
	Mounts    int // mount table changes, each of which marks every tree changed
}

// entry is one tree: a root with its skip lists.
type entry struct {
	root string
	opt  build.TreeOptions

	walking sync.Mutex // one walk of this tree at a time

	// Guarded by Watcher.mu:
	tree    build.Tree
	current bool   // tree is what the root holds unless dirty
	dirty   bool   // a notification named a path in the tree
	watched bool   // every directory of the tree is watched
	setup   bool   // watching was tried since the last overflow
	why     string // why the tree is not watched, once logged
}

// New returns a Watcher. On a platform without suitable notifications, or
// when the notifications cannot be set up (logged through logf), it walks
// on every call. Close releases it.
func New(logf func(string, ...any)) *Watcher {
	w := &Watcher{logf: logf, trees: map[string]*entry{}, done: make(chan struct{}),
		changes: make(chan struct{}, 1), pause: make(chan chan struct{})}
	if !notifications {
		close(w.done)
		return w
	}
	sweepBarriers()
	in, err := openInotify(treeMask)
	if err != nil {
		logf("file notifications unavailable (%v): trees are walked on every build", err)
		close(w.done)
		return w
	}
	w.in = in
	go w.loop()
	go w.pauses()
	return w
}

// Close stops watching.
func (w *Watcher) Close() {
	if w == nil || w.in == nil {
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mountWatch.close()
	w.mu.Unlock()
	w.in.close() // ends the loop's wait
	<-w.done
}

// Changes returns a channel that receives a value after a notification
// marked a tree changed (or every tree, after the kernel's queue
// overflowed). Signals that arrive while one is pending are merged into
// it; a receiver asks Digest what changed. It never receives when w does
// not watch (a nil Watcher returns nil).
func (w *Watcher) Changes() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.changes
}

// Generation returns a count that grows whenever a notification marks a
// tree changed (or every tree, after the kernel's queue overflowed or the
// mount table changed), once every notification the kernel queued before
// the call was handled, without waiting (one read(2) when none is
// queued): a change made before the call returned, such as a write that
// returned before a request arrived, is counted. A caller that noted it
// before computing what the trees hold knows, when it differs later, that
// something under them changed since. It is 0 and never changes when w
// does not watch (a nil Watcher, a platform without notifications).
func (w *Watcher) Generation() uint64 {
	if !w.Watching() {
		return 0
	}
	w.sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// Unwatched reports whether a change to a tree Digest was asked for can
// go without a notification: the platform sends none (Watching is false),
// or a tree is walked on every call instead of watched (a link out of it,
// another mount, a file with other names, the watch limit). Its
// Generation then vouches for nothing: a caller that must know the tree
// is as it was hashed walks it again.
func (w *Watcher) Unwatched() bool {
	if !w.Watching() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.trees {
		if !e.watched {
			return true
		}
	}
	return false
}

// changedLocked counts a change (Generation) and signals Changes without
// waiting.
func (w *Watcher) changedLocked() {
	w.gen++
	select {
	case w.changes <- struct{}{}:
	default:
	}
}

// Watching reports whether w keeps trees current from notifications; when
// not, every Digest walks.
func (w *Watcher) Watching() bool { return w != nil && w.in != nil }

// Synced handles every notification the kernel queued before the call,
// as Digest does before it answers, and returns a Digest that counts on
// that instead of waiting for the kernel again: a caller that digests
// several trees for one request (an identity's code tree and dependency
// trees) waits once. A change made after Synced returned may be seen by
// the Digest it returned or only by the next call, as a change made while
// Digest runs may.
func (w *Watcher) Synced() func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
	if w.Watching() && !w.isClosed() {
		w.sync()
	}
	return func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
		return w.digest(root, opt, walk, false)
	}
}

// digest is Digest; with sync, it first waits for the notifications
// queued before the call.
func (w *Watcher) digest(root string, opt build.TreeOptions, walk func() (build.Tree, error), sync bool) (build.Tree, error) {
	if !w.Watching() || w.isClosed() {
		return walk()
	}
	e := w.entry(root, opt)
	e.walking.Lock()
	defer e.walking.Unlock()
	if sync {
		w.sync()
	}
	w.mu.Lock()
	if e.current && !e.dirty && e.watched {
		t := e.tree
		w.stats.Answered++
		w.mu.Unlock()
		t.NativeAddons = slices.Clone(t.NativeAddons)
		return t, nil
	}
	e.dirty, e.current = false, false // what happens from here on marks it again
	setup := !e.setup
	e.setup = true
	w.stats.Walks++
	w.mu.Unlock()
	if setup {
		w.watch(e) // before the walk: a change while it runs is seen
	}
	t, err := walk()
	if err != nil {
		return t, err
	}
	w.mu.Lock()
	e.tree, e.current = t, true
	e.tree.NativeAddons = slices.Clone(t.NativeAddons)
	e.tree.Listing = nil
	w.mu.Unlock()
	return t, nil
}

func (w *Watcher) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Watched reports whether the tree at root with opt's skip lists is kept
// current from notifications: false for a tree not walked yet, and for one
// walked on every call (package doc).
func (w *Watcher) Watched(root string, opt build.TreeOptions) bool {
	if !w.Watching() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.trees[Key(root, opt)]
	return e != nil && e.setup && e.watched
}

// Known is one tree a Watcher knows to be current.
type Known struct {
	Root string
	Opt  build.TreeOptions // skip lists only
	Tree build.Tree
}

// Current returns every watched tree w has walked, once every
// notification queued before the call was handled, and whether all of them
// are current (walked, and named by no notification since). When not, the
// caller digests them through Digest instead. Trees walked on every call
// (package doc) are left out: a caller that needs them walks them.
func (w *Watcher) Current() ([]Known, bool) {
	if !w.Watching() || w.isClosed() {
		return nil, false
	}
	w.sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Known, 0, len(w.trees))
	for _, e := range w.trees {
		if e.setup && !e.watched {
			continue
		}
		if !e.current || e.dirty {
			return nil, false
		}
		t := e.tree
		t.NativeAddons = slices.Clone(t.NativeAddons)
		out = append(out, Known{Root: e.root, Opt: e.opt, Tree: t})
	}
	slices.SortFunc(out, func(a, b Known) int { return strings.Compare(a.Root, b.Root) })
	return out, len(out) > 0
}

// entry returns the entry for root and opt's skip lists, made if new.
func (w *Watcher) entry(root string, opt build.TreeOptions) *entry {
	key := Key(root, opt)
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.trees[key]
	if e == nil {
		e = &entry{root: filepath.Clean(root), opt: build.TreeOptions{SkipDirs: slices.Clone(opt.SkipDirs), SkipFiles: slices.Clone(opt.SkipFiles), OnlyFiles: slices.Clone(opt.OnlyFiles)}}
		w.trees[key] = e
	}
	return e
}

// Key names a tree: its root and skip lists (and OnlyFiles), in a
// canonical form (the lists sorted). Two trees with the same Key have the
// same digest.
func Key(root string, opt build.TreeOptions) string {
	d, f := slices.Clone(opt.SkipDirs), slices.Clone(opt.SkipFiles)
	slices.Sort(d)
	slices.Sort(f)
	key := filepath.Clean(root) + "\x00" + strings.Join(slices.Compact(d), "\x00") + "\x00\x00" + strings.Join(slices.Compact(f), "\x00")
	if len(opt.OnlyFiles) > 0 {
		o := slices.Clone(opt.OnlyFiles)
		slices.Sort(o)
		key += "\x00\x00\x00" + strings.Join(slices.Compact(o), "\x00")
	}
	return key
}

// sync returns once every notification queued before it was handled
// (package doc): it reads what the kernel holds itself. When that cannot
// be done, every tree counts as changed.
func (w *Watcher) sync() {
	w.mu.Lock()
	w.stats.Syncs++
	note := w.drainLocked()
	w.checkMountsLocked()
	w.mu.Unlock()
	if note != "" {
		w.logf("%s", note)
	}
}

// markAllLocked marks every tree changed; with rewatch, its directories
// are watched anew at its next walk (after an overflow, directories made
// meanwhile may lack a watch).
func (w *Watcher) markAllLocked(rewatch bool) {
	w.gen++
	for _, e := range w.trees {
		e.dirty = true
		if rewatch {
			e.setup = false
		}
	}
}

// loop handles notifications as the kernel queues them, until Close.
func (w *Watcher) loop() {
	defer close(w.done)
	rc, err := w.in.f.SyscallConn()
	if err != nil {
		w.mu.Lock()
		w.markAllLocked(false)
		w.mu.Unlock()
		w.logf("file notifications: %v: every tree is walked again", err)
		return
	}
	// Read calls the function when the instance may have events, until
	// it returns true or the instance is closed.
	rc.Read(func(uintptr) bool {
		w.mu.Lock()
		note := ""
		if !w.paused {
			note = w.drainLocked()
		}
		closed := w.closed
		w.mu.Unlock()
		if note != "" {
			w.logf("%s", note)
		}
		return closed
	})
}

// pauses serves the pause channel (tests) until Close.
func (w *Watcher) pauses() {
	for {
		select {
		case <-w.done:
			return
		case resume := <-w.pause:
			w.mu.Lock()
			w.paused = true
			w.mu.Unlock()
			<-resume
			w.mu.Lock()
			w.paused = false
			w.mu.Unlock()
		}
	}
}

// drainLocked handles every event the kernel holds, and returns what to
// log, if anything: after the queue overflowed (events were lost) or a
// read failed, every tree is walked again and its directories watched anew.
func (w *Watcher) drainLocked() string {
	if w.closed {
		return ""
	}
	overflow, err := w.in.drain(w.eventLocked)
	if !overflow && err == nil {
		return ""
	}
	if overflow {
		w.stats.Overflows++
		err = errors.New("event queue overflow")
	}
	w.markAllLocked(true)
	w.changedLocked()
	return "file notifications: " + err.Error() + ": every tree is walked again"
}

// eventLocked marks the trees that name, a path made (created, moved in)
// when made is set or else changed or removed, is in, and watches a
// directory made in one.
func (w *Watcher) eventLocked(name string, made, _ bool) {
	for _, e := range w.trees {
		rel, ok := relPath(e.root, name)
		if !ok || skipped(rel, e.opt) || unlisted(name, e.opt) {
			continue
		}
		e.dirty = true
		w.changedLocked()
		if rel == "" {
			e.setup = false // the root itself was made, removed or replaced
			continue
		}
		if st, err := os.Lstat(name); e.watched && err == nil && st.Mode().IsRegular() && links(st) > 1 {
			// A name made for a file of the tree (link(2) changes its
			// attributes): writes through it will send nothing here.
			w.unwatchLocked(e, "the file "+rel+" has other names (hard links), and a write through another name sends no notification for this one")
		}
		if made && e.watched {
			if why := w.addTreeLocked(e, name); why != "" {
				w.unwatchLocked(e, why)
			}
		}
	}
}

// relPath returns p relative to root, slash-separated ("" for root
// itself), and whether p is root or inside it.
func relPath(root, p string) (string, bool) {
	if p == root {
		return "", true
	}
	if !strings.HasPrefix(p, root) || p[len(root)] != filepath.Separator {
		return "", false
	}
	return filepath.ToSlash(p[len(root)+1:]), true
}

// unlisted reports whether the path p is a regular file the tree does not
// list (build.TreeOptions.OnlyFiles): the data a server writes beside its
// code is no change of the tree. A path that is gone, or any other kind
// of entry, counts.
func unlisted(p string, opt build.TreeOptions) bool {
	if len(opt.OnlyFiles) == 0 {
		return false
	}
	name := filepath.Base(p)
	if slices.Contains(opt.OnlyFiles, name) || slices.Contains(opt.OnlyFiles, strings.ToLower(filepath.Ext(name))) {
		return false
	}
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// skipped reports whether rel is left out of the tree: under a directory
// named in opt.SkipDirs, or a file in opt.SkipFiles.
func skipped(rel string, opt build.TreeOptions) bool {
	if slices.Contains(opt.SkipFiles, rel) {
		return true
	}
	for part := range strings.SplitSeq(rel, "/") {
		if slices.Contains(opt.SkipDirs, part) {
			return true
		}
	}
	return false
}
