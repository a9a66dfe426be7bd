package treewatch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
)

// tree is a temporary tree under a parent directory of its own.
type tree struct {
	t      *testing.T
	w      *Watcher
	parent string
	root   string
	opt    build.TreeOptions
	walks  int
}

func newTree(t *testing.T) *tree {
	t.Helper()
	if !notifications {
		t.Skip("no file notifications on " + runtime.GOOS + ": Digest always walks (TestWalksWithoutNotifications)")
	}
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := &tree{t: t, parent: parent, root: filepath.Join(parent, "dist"), opt: build.TreeOptions{SkipDirs: []string{".cache"}}}
	tr.write("index.js", "one")
	tr.write("lib/a.js", "a")
	tr.w = New(t.Logf)
	t.Cleanup(tr.w.Close)
	return tr
}

func (tr *tree) write(name, content string) {
	tr.t.Helper()
	p := filepath.Join(tr.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// digest asks the watcher and checks its answer against a fresh walk; it
// reports whether the watcher walked.
func (tr *tree) digest() (build.Tree, bool) {
	tr.t.Helper()
	before := tr.walks
	got, err := tr.w.Digest(tr.root, tr.opt, func() (build.Tree, error) {
		tr.walks++
		return build.TreeDigest(tr.root, tr.opt)
	})
	if err != nil {
		tr.t.Fatal(err)
	}
	want, err := build.TreeDigest(tr.root, tr.opt)
	if err != nil {
		tr.t.Fatal(err)
	}
	if got.Digest != want.Digest || got.Files != want.Files || got.Bytes != want.Bytes {
		tr.t.Fatalf("watcher says %s (%d files, %d bytes), a walk %s (%d files, %d bytes)", got.Digest, got.Files, got.Bytes, want.Digest, want.Files, want.Bytes)
	}
	return got, tr.walks > before
}

// step makes a change with f and checks that the next Digest walks and
// the one after does not.
func (tr *tree) step(what string, f func()) {
	tr.t.Helper()
	before, _ := tr.digest()
	f()
	after, walked := tr.digest()
	if !walked {
		tr.t.Fatalf("%s: Digest answered without walking", what)
	}
	if after.Digest == before.Digest {
		tr.t.Fatalf("%s: digest unchanged", what)
	}
	mounts := tr.w.Stats().Mounts
	if _, walked := tr.digest(); walked && tr.w.Stats().Mounts == mounts {
		tr.t.Fatalf("%s: Digest walked again with nothing changed", what)
	}
	// A mount or unmount elsewhere on the machine (other tests' sandboxes)
	// walks every tree again, rightly: the walk it caused is no failure.
}

func (tr *tree) run(name string, args ...string) {
	tr.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = tr.root
	if out, err := cmd.CombinedOutput(); err != nil {
		tr.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestDigestFollowsChanges: an untouched tree is answered without a walk;
// every kind of change a build or an editor makes is seen at the next
// Digest, which walks, and then the tree is answered from memory again.
func TestDigestFollowsChanges(t *testing.T) {
	tr := newTree(t)
	if _, walked := tr.digest(); !walked {
		t.Fatal("the first Digest did not walk")
	}
	if _, walked := tr.digest(); walked {
		t.Fatal("the second Digest walked an untouched tree")
	}
	tr.step("write in place", func() { tr.write("lib/a.js", "a2") })
	tr.step("sed -i (write a copy, rename it over)", func() { tr.run("sed", "-i", "s/one/two/", "index.js") })
	tr.step("delete", func() { tr.run("rm", "lib/a.js") })
	tr.step("new directory", func() { tr.run("mkdir", "-p", "deep/er") })
	tr.step("file in the new directory", func() { tr.write("deep/er/b.js", "b") })
	tr.step("write in the new directory", func() { tr.write("deep/er/b.js", "b2") })
	tr.step("symbolic link inside", func() { tr.run("ln", "-s", "index.js", "alias.js") })
	tr.step("retarget the link", func() { tr.run("ln", "-sfn", "deep/er/b.js", "alias.js") })
	tr.step("exec bit", func() { tr.run("chmod", "+x", "index.js") })
	tr.step("rename a directory", func() { tr.run("mv", "deep", "deeper") })
	tr.step("replace the root", func() {
		tr.run("sh", "-c", "cp -r . ../dist.new && echo three > ../dist.new/index.js")
		if err := os.RemoveAll(tr.root); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tr.root+".new", tr.root); err != nil {
			t.Fatal(err)
		}
	})
	tr.step("write after the root was replaced", func() { tr.write("index.js", "four") })

	// A skipped directory is not the tree's: no walk.
	tr.write(".cache/x", "x")
	tr.digest()
	tr.write(".cache/x", "y")
	if _, walked := tr.digest(); walked {
		t.Error("a write in a skipped directory made Digest walk")
	}
	if s := tr.w.Stats(); s.Answered == 0 || s.Overflows != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestLinkOutsideIsWalked: a tree with a link that leads outside it is
// walked on every call (TreeDigest walks what the link reaches, which no
// watch covers), and a change out there is seen.
func TestLinkOutsideIsWalked(t *testing.T) {
	tr := newTree(t)
	outside := filepath.Join(tr.parent, "pkg")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "m.js"), []byte("1"), 0o644)
	tr.run("ln", "-s", "../pkg", "pkg")
	before, _ := tr.digest()
	os.WriteFile(filepath.Join(outside, "m.js"), []byte("2"), 0o644)
	after, walked := tr.digest()
	if !walked || after.Digest == before.Digest {
		t.Fatalf("a change behind a link leading outside: walked %v, digest changed %v", walked, after.Digest != before.Digest)
	}
	if _, walked := tr.digest(); !walked {
		t.Fatal("a tree with a link leading outside was answered without a walk")
	}
}

// TestOverflowWalksAgain: when the kernel's event queue overflows, the
// notifications it dropped are not trusted away: every tree is walked at
// its next Digest. The overflow is a real one: the event loop is paused
// while more events are made than /proc/sys/fs/inotify/max_queued_events
// holds, then a change is made whose event the kernel drops.
func TestOverflowWalksAgain(t *testing.T) {
	tr := newTree(t)
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(string(b), &limit)
	}
	if limit > 200000 {
		t.Skipf("max_queued_events is %d: too many events to make", limit)
	}
	before, _ := tr.digest()
	resume := make(chan struct{})
	tr.w.pause <- resume
	// Events on the parent are queued but name no tree; two files take
	// turns so that the kernel cannot merge them.
	noise := [2]*os.File{}
	for i := range noise {
		f, err := os.Create(filepath.Join(tr.parent, fmt.Sprintf("noise%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		noise[i] = f
	}
	for i := range limit + 4096*2 + 1000 { // fsnotify reads up to 4096 events ahead
		noise[i%2].Write([]byte{'x'})
	}
	tr.write("index.js", "changed while the queue was full")
	close(resume)
	after, walked := tr.digest()
	if !walked || after.Digest == before.Digest {
		t.Fatalf("after an overflow: walked %v, digest changed %v", walked, after.Digest != before.Digest)
	}
	if s := tr.w.Stats(); s.Overflows == 0 {
		t.Fatalf("no overflow seen: stats %+v", s)
	}
	tr.step("a change after the overflow", func() { tr.write("lib/new.js", "n") })
}

// TestWalksWithoutNotifications: a nil Watcher, and a tree on a platform
// without notifications, walks on every call.
func TestWalksWithoutNotifications(t *testing.T) {
	var w *Watcher
	n := 0
	for range 2 {
		w.Digest("/nowhere", build.TreeOptions{}, func() (build.Tree, error) { n++; return build.Tree{}, nil })
	}
	if n != 2 {
		t.Fatalf("nil Watcher walked %d times in 2 calls", n)
	}
	if !notifications {
		w := New(t.Logf)
		defer w.Close()
		for range 2 {
			w.Digest("/nowhere", build.TreeOptions{}, func() (build.Tree, error) { n++; return build.Tree{}, nil })
		}
		if n != 4 {
			t.Fatalf("Watcher on %s walked %d times in 2 calls", runtime.GOOS, n-2)
		}
	}
}

// TestCurrent: Current lists the trees walked while all are current, and
// says not once a notification named one, until it is walked again.
func TestCurrent(t *testing.T) {
	tr := newTree(t)
	if _, ok := tr.w.Current(); ok {
		t.Fatal("Current before any walk says every tree is current")
	}
	want, _ := tr.digest()
	known, ok := tr.w.Current()
	if !ok || len(known) != 1 || known[0].Root != tr.root || known[0].Tree.Digest != want.Digest {
		t.Fatalf("Current = %+v, %v; want the one tree walked", known, ok)
	}
	tr.write("index.js", "changed")
	if _, ok := tr.w.Current(); ok {
		t.Fatal("Current after a change says every tree is current")
	}
	tr.digest()
	if _, ok := tr.w.Current(); !ok {
		t.Fatal("Current after the walk says a tree is not current")
	}
}

// TestStaleBarrierSwept: New removes the private directory a Watcher of a
// process that no longer exists left behind (a host killed with SIGKILL),
// and keeps that of a live process.
func TestStaleBarrierSwept(t *testing.T) {
	if !notifications {
		t.Skip("no private directory without notifications")
	}
	dead := filepath.Join(os.TempDir(), barrierPrefix+"99999999-test")
	live := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-test", barrierPrefix, os.Getpid()))
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	New(t.Logf).Close()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the directory of a process that is gone is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the directory of a live process was removed: %v", err)
	}
}

// TestCurrentLeavesOutUnwatched: a tree walked on every call is not among
// the current ones, and does not stop the others from being current.
func TestCurrentLeavesOutUnwatched(t *testing.T) {
	tr := newTree(t)
	tr.digest()
	other := filepath.Join(tr.parent, "lib")
	os.MkdirAll(other, 0o755)
	if err := os.Symlink("../elsewhere", filepath.Join(other, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.w.Digest(other, build.TreeOptions{}, func() (build.Tree, error) { return build.TreeDigest(other, build.TreeOptions{}) }); err != nil {
		t.Fatal(err)
	}
	if tr.w.Watched(other, build.TreeOptions{}) || !tr.w.Watched(tr.root, tr.opt) {
		t.Fatalf("Watched: %s %v, %s %v", other, tr.w.Watched(other, build.TreeOptions{}), tr.root, tr.w.Watched(tr.root, tr.opt))
	}
	known, ok := tr.w.Current()
	if !ok || len(known) != 1 || known[0].Root != tr.root {
		t.Fatalf("Current = %+v, %v; want only %s", known, ok, tr.root)
	}
}

// TestWatchLimitWalks: a tree with more directories than the watches left
// (max_user_watches; here a limit the test sets) is walked on every call,
// and its changes are seen.
func TestWatchLimitWalks(t *testing.T) {
	tr := newTree(t)
	tr.w.mu.Lock()
	tr.w.maxWatches = 1 // the tree has two directories, dist and dist/lib
	tr.w.mu.Unlock()
	before, _ := tr.digest()
	if tr.w.Watched(tr.root, tr.opt) {
		t.Fatal("a tree beyond the watch limit counts as watched")
	}
	tr.write("lib/a.js", "past the limit")
	after, walked := tr.digest()
	if !walked || after.Digest == before.Digest {
		t.Fatalf("beyond the watch limit: walked %v, digest changed %v", walked, after.Digest != before.Digest)
	}
	if _, walked := tr.digest(); !walked {
		t.Fatal("a tree beyond the watch limit was answered without a walk")
	}
}

// TestBindMountWalksAgain: a file bind-mounted over a watched file changes
// what the path reads with no notification; the changed mount table makes
// the next Digest walk, and its answer is the walk's. Needs the right to
// mount (root on Linux).
func TestBindMountWalksAgain(t *testing.T) {
	tr := newTree(t)
	tr.digest()
	if _, walked := tr.digest(); walked {
		t.Fatal("a second Digest with nothing changed walked")
	}
	other := filepath.Join(tr.parent, "other.js")
	if err := os.WriteFile(other, []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(tr.root, "index.js")
	if out, err := exec.Command("mount", "--bind", other, target).CombinedOutput(); err != nil {
		t.Skipf("mount --bind: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", target).Run() })
	if _, walked := tr.digest(); !walked {
		t.Fatal("Digest after a bind mount over a watched file did not walk")
	}
}

// TestChangesSignals: a write in a watched tree signals Changes, without
// anyone asking for a Digest; a write in a skipped directory does not.
func TestChangesSignals(t *testing.T) {
	tr := newTree(t)
	tr.digest() // walks and watches
	select {
	case <-tr.w.Changes():
	default: // the walk itself signals nothing
	}
	tr.write(".cache/x", "x")
	select {
	case <-tr.w.Changes():
		t.Fatal("a write in a skipped directory signalled a change")
	case <-time.After(500 * time.Millisecond):
	}
	tr.write("lib/a.js", "a2")
	select {
	case <-tr.w.Changes():
	case <-time.After(20 * time.Second):
		t.Fatal("a write in the tree did not signal a change within 20s")
	}
}

// TestSyncedWaitsOnce: the Digest that Synced returns sees what changed
// before Synced in every tree, having waited for the kernel's queue once
// for all of them.
func TestSyncedWaitsOnce(t *testing.T) {
	tr := newTree(t)
	other := &tree{t: t, w: tr.w, parent: tr.parent, root: filepath.Join(tr.parent, "node_modules")}
	other.write("x/index.js", "x")
	tr.digest()
	other.digest()
	tr.write("index.js", "changed")
	other.write("x/index.js", "changed")
	before := tr.w.Stats().Syncs
	digest := tr.w.Synced()
	for _, x := range []*tree{tr, other} {
		walked := false
		got, err := digest(x.root, x.opt, func() (build.Tree, error) { walked = true; return build.TreeDigest(x.root, x.opt) })
		if err != nil {
			t.Fatal(err)
		}
		want, _ := build.TreeDigest(x.root, x.opt)
		if !walked || got.Digest != want.Digest {
			t.Fatalf("%s: walked %v, digest %s, want a walk giving %s", x.root, walked, got.Digest, want.Digest)
		}
	}
	if n := tr.w.Stats().Syncs - before; n != 1 {
		t.Errorf("Synced and two digests waited for the kernel's queue %d times, want once", n)
	}
	if _, walked := other.digest(); walked {
		t.Error("a Digest after the walk walked again with nothing changed")
	}
}

// TestSyncReadsTheQueueItself: a Digest handles what the kernel queued
// before it even while the event loop reads nothing: the tree a change
// named walks, and a tree no change named is still answered from memory
// (no timeout made every tree count as changed).
func TestSyncReadsTheQueueItself(t *testing.T) {
	tr := newTree(t)
	other := &tree{t: t, w: tr.w, parent: tr.parent, root: filepath.Join(tr.parent, "node_modules")}
	other.write("x/index.js", "x")
	tr.digest()
	other.digest()
	resume := make(chan struct{})
	tr.w.pause <- resume
	defer close(resume)
	for paused := false; !paused; time.Sleep(time.Millisecond) {
		tr.w.mu.Lock()
		paused = tr.w.paused
		tr.w.mu.Unlock()
	}
	before := tr.w.Stats().Walks
	tr.write("index.js", "changed while the loop reads nothing")
	if _, walked := other.digest(); walked {
		t.Error("a tree no change named was walked")
	}
	if _, walked := tr.digest(); !walked {
		t.Error("the tree a change named was answered without a walk")
	}
	if n := tr.w.Stats().Walks - before; n != 1 {
		t.Errorf("%d walks, want 1", n)
	}
}

// TestOnlyFilesSignals: in a tree that lists only some files (a project
// walked as a script's code), a write of a file it does not list (a
// server's own data) neither signals a change nor makes Digest walk; a
// write of a listed file does. A link by a skipped name that leads out of
// the tree (a node_modules linked to a shared install) is not walked, and
// the tree is still watched.
func TestOnlyFilesSignals(t *testing.T) {
	tr := newTree(t)
	tr.opt = build.TreeOptions{SkipDirs: []string{"node_modules"}, OnlyFiles: []string{".js"}}
	shared := filepath.Join(tr.parent, "shared")
	if err := os.MkdirAll(filepath.Join(shared, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(tr.root, "node_modules")); err != nil {
		t.Fatal(err)
	}
	tr.digest()
	if _, walked := tr.digest(); walked {
		t.Fatal("Digest walked again with nothing changed: the tree is not watched")
	}
	select {
	case <-tr.w.Changes():
	default:
	}
	tr.write("state.json", "{}")
	select {
	case <-tr.w.Changes():
		t.Fatal("a write of a file the tree does not list signalled a change")
	case <-time.After(500 * time.Millisecond):
	}
	if _, walked := tr.digest(); walked {
		t.Fatal("Digest walked after a write of a file the tree does not list")
	}
	tr.step("lib/a.js rewritten", func() { tr.write("lib/a.js", "a2") })
}

// TestGenerationCountsAtOnce: a write that returned before Generation is
// counted by it, with no wait for the event loop; a write in a skipped
// directory is not.
func TestGenerationCountsAtOnce(t *testing.T) {
	tr := newTree(t)
	tr.digest()
	g0 := tr.w.Generation()
	tr.write(".cache/x", "x")
	if g := tr.w.Generation(); g != g0 {
		t.Fatalf("a write in a skipped directory moved the generation: %d → %d", g0, g)
	}
	for i := range 50 {
		tr.write("lib/a.js", fmt.Sprint("a", i))
		g := tr.w.Generation()
		if g == g0 {
			t.Fatalf("write %d: Generation did not count the write that returned before it", i)
		}
		g0 = g
	}
	var nilW *Watcher
	if nilW.Generation() != 0 {
		t.Error("a nil Watcher's generation is not 0")
	}
}
