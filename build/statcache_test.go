package build

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// cacheTree builds a tree of n small files and waits until their change
// times are outside the racy window, so a cache may trust them.
func cacheTree(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	var specs []treeSpec
	for i := range n {
		specs = append(specs, treeSpec{path: fmt.Sprintf("p%d/f%d.js", i%3, i), content: fmt.Sprintf("file %d\n", i)})
	}
	mkTree(t, root, specs...)
	time.Sleep(racyWindow + 200*time.Millisecond)
	return root
}

func TestStatCacheWarmRun(t *testing.T) {
	t.Parallel()
	root := cacheTree(t, 20)
	c := NewStatCache()
	cold := mustTree(t, root, TreeOptions{Cache: c})
	if cold.Hashed != 20 || c.Len() != 20 || !c.Dirty() {
		t.Fatalf("cold: hashed %d, cache len %d dirty %v; want 20 20 true", cold.Hashed, c.Len(), c.Dirty())
	}
	if err := c.Save(filepath.Join(t.TempDir(), "cache.bin")); err != nil {
		t.Fatal(err)
	}
	warm := mustTree(t, root, TreeOptions{Cache: c})
	if warm.Hashed != 0 || warm.Digest != cold.Digest || c.Dirty() {
		t.Fatalf("warm: hashed %d digest %s dirty %v; want 0 %s false", warm.Hashed, warm.Digest, c.Dirty(), cold.Digest)
	}
	if tr := mustTree(t, root, TreeOptions{Cache: c, Rehash: true}); tr.Hashed != 20 || tr.Digest != cold.Digest {
		t.Errorf("rehash: hashed %d digest %s; want 20 %s", tr.Hashed, tr.Digest, cold.Digest)
	}

	// Touching the mtime without changing bytes: same digest, and only that
	// file is read again.
	f := filepath.Join(root, "p1/f4.js")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	touched := mustTree(t, root, TreeOptions{Cache: c})
	if touched.Digest != cold.Digest || touched.Hashed != 1 {
		t.Errorf("after touch: digest %s hashed %d; want %s 1", touched.Digest, touched.Hashed, cold.Digest)
	}

	// New bytes of the same size with the mtime put back (touch -r): the
	// ctime gives it away.
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("FILE 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if !st2.ModTime().Equal(st.ModTime()) || st2.Size() != st.Size() {
		t.Fatalf("test setup: mtime %v size %d, want %v %d", st2.ModTime(), st2.Size(), st.ModTime(), st.Size())
	}
	changed := mustTree(t, root, TreeOptions{Cache: c})
	full := mustTree(t, root, TreeOptions{})
	if changed.Digest == cold.Digest || changed.Digest != full.Digest || changed.Hashed < 1 {
		t.Errorf("after rewrite with mtime restored: digest %s hashed %d; want %s (not %s) and a rehash",
			changed.Digest, changed.Hashed, full.Digest, cold.Digest)
	}

	// Removing a file drops it from the cache.
	if err := os.Remove(filepath.Join(root, "p0/f0.js")); err != nil {
		t.Fatal(err)
	}
	mustTree(t, root, TreeOptions{Cache: c})
	if c.Len() != 19 {
		t.Errorf("after removing a file: cache len %d, want 19", c.Len())
	}
}

// TestStatCacheRacy checks that entries recorded within the racy window of
// the walk are not trusted: files written just now are read again.
func TestStatCacheRacy(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkTree(t, root, treeSpec{path: "a", content: "a"}, treeSpec{path: "b/c", content: "c"})
	c := NewStatCache()
	first := mustTree(t, root, TreeOptions{Cache: c})
	second := mustTree(t, root, TreeOptions{Cache: c})
	if first.Hashed != 2 || second.Hashed != 2 || second.Digest != first.Digest {
		t.Errorf("hashed %d then %d, want 2 then 2 (racy entries rehashed)", first.Hashed, second.Hashed)
	}
	if !c.Dirty() {
		t.Errorf("a walk that rehashed racy entries left the cache clean; its stamp would not advance")
	}
}

func TestStatCacheSaveLoad(t *testing.T) {
	t.Parallel()
	root := cacheTree(t, 12)
	mkTree(t, root, treeSpec{path: "p0/link", link: "f0.js"}, treeSpec{path: "p0/addon.node", content: "bin"})
	dir := t.TempDir()
	path := filepath.Join(dir, "cache", "tree-x.bin")
	c := NewStatCache()
	cold := mustTree(t, root, TreeOptions{Cache: c})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if c.Dirty() {
		t.Errorf("cache dirty after Save")
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(ents) != 1 {
		t.Errorf("cache directory holds %v (%v), want only the cache file", ents, err)
	}
	loaded, err := LoadStatCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != 13 || loaded.root != c.root || loaded.stamp != c.stamp {
		t.Fatalf("loaded len %d root %q stamp %d; want 13 %q %d", loaded.Len(), loaded.root, loaded.stamp, c.root, c.stamp)
	}
	if !reflect.DeepEqual(loaded.dirs, c.dirs) || !reflect.DeepEqual(loaded.summary, c.summary) {
		t.Errorf("loaded cache differs from the saved one")
	}

	// Wait until the link and the addon are old enough to be trusted too.
	time.Sleep(racyWindow + 200*time.Millisecond)
	if tr := mustTree(t, root, TreeOptions{Cache: loaded}); tr.Hashed != 1 || tr.Digest != cold.Digest {
		t.Fatalf("second run: hashed %d digest %s; want 1 %s", tr.Hashed, tr.Digest, cold.Digest)
	}
	if err := loaded.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err = LoadStatCache(path)
	if err != nil {
		t.Fatal(err)
	}
	warm := mustTree(t, root, TreeOptions{Cache: loaded})
	if warm.Hashed != 0 || warm.Digest != cold.Digest || loaded.Dirty() {
		t.Errorf("warm from file: hashed %d digest %s dirty %v; want 0 %s false", warm.Hashed, warm.Digest, loaded.Dirty(), cold.Digest)
	}
	if !reflect.DeepEqual(warm.NativeAddons, cold.NativeAddons) || warm.Files != cold.Files || warm.Bytes != cold.Bytes || warm.Symlinks != 1 {
		t.Errorf("warm from file: %+v, cold %+v", warm, cold)
	}
	kept := mustTree(t, root, TreeOptions{Cache: loaded, KeepListing: true})
	if kept.Hashed != 0 || DigestBytes(kept.Listing) != cold.Digest {
		t.Errorf("warm with KeepListing: hashed %d, listing digest %s", kept.Hashed, DigestBytes(kept.Listing))
	}

	// A missing file is an empty cache, not an error.
	if c, err := LoadStatCache(filepath.Join(dir, "none.bin")); err != nil || c.Len() != 0 {
		t.Errorf("missing cache file: len %d err %v", c.Len(), err)
	}

	// A cache recorded for another root, or other SkipDirs, is not trusted.
	other := t.TempDir()
	if err := os.CopyFS(other, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	if tr := mustTree(t, other, TreeOptions{Cache: loaded}); tr.Hashed != 13 || tr.Digest != cold.Digest {
		t.Errorf("other root: hashed %d digest %s; want 13 %s", tr.Hashed, tr.Digest, cold.Digest)
	}
	if tr := mustTree(t, root, TreeOptions{Cache: loaded, SkipDirs: []string{"p1"}}); tr.Hashed != 9 || tr.Files != 9 {
		t.Errorf("other SkipDirs: hashed %d files %d; want 9 9", tr.Hashed, tr.Files)
	}
}

// TestStatCacheFollowsChanges makes changes to a tree whose cache trusts
// every entry and checks each digest against one computed without a cache.
func TestStatCacheFollowsChanges(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mkTree(t, base,
		treeSpec{path: "root/a/one.js", content: "1"},
		treeSpec{path: "root/a/two.js", content: "2"},
		treeSpec{path: "root/b/three.js", content: "3"},
		treeSpec{path: "root/l", link: "a"},
		treeSpec{path: "root/ws", link: "../ws"},
		treeSpec{path: "root/wsfile", link: "../ws/x.js"},
		treeSpec{path: "ws/x.js", content: "x"},
		treeSpec{path: "ws/sub/y.js", content: "y"},
	)
	time.Sleep(racyWindow + 200*time.Millisecond)
	c := NewStatCache()
	mustTree(t, root, TreeOptions{Cache: c})
	if tr := mustTree(t, root, TreeOptions{Cache: c}); tr.Hashed != 0 {
		t.Fatalf("warm run hashed %d", tr.Hashed)
	}
	p := func(s string) string { return filepath.Join(base, filepath.FromSlash(s)) }
	steps := []struct {
		name string
		do   func() error
	}{
		{"add a file", func() error { return os.WriteFile(p("root/a/new.js"), []byte("n"), 0o644) }},
		{"remove a file", func() error { return os.Remove(p("root/a/one.js")) }},
		{"rename a file", func() error { return os.Rename(p("root/a/two.js"), p("root/a/deux.js")) }},
		{"move a file to another directory", func() error { return os.Rename(p("root/a/deux.js"), p("root/b/deux.js")) }},
		{"replace a file by a directory", func() error {
			if err := os.Remove(p("root/b/three.js")); err != nil {
				return err
			}
			return os.MkdirAll(p("root/b/three.js/inner"), 0o755)
		}},
		{"replace a directory by a link", func() error {
			if err := os.RemoveAll(p("root/b/three.js")); err != nil {
				return err
			}
			return os.Symlink("../a/new.js", p("root/b/three.js"))
		}},
		{"retarget a link", func() error { return relink(p("root/l"), "b") }},
		{"chmod a file", func() error { return os.Chmod(p("root/a/new.js"), 0o755) }},
		{"edit a file outside through a directory link", func() error { return os.WriteFile(p("ws/sub/y.js"), []byte("Y"), 0o644) }},
		{"edit a file outside through a file link", func() error { return os.WriteFile(p("ws/x.js"), []byte("X"), 0o644) }},
		{"add a directory outside", func() error { return os.Mkdir(p("ws/sub2"), 0o755) }},
		{"empty a directory", func() error { return os.Remove(p("root/b/deux.js")) }},
	}
	prev := mustTree(t, root, TreeOptions{}).Digest
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := mustTree(t, root, TreeOptions{})
		got := mustTree(t, root, TreeOptions{Cache: c, KeepListing: true})
		if got.Digest != want.Digest {
			t.Errorf("%s: cached digest %s, want %s\n%s", s.name, got.Digest, want.Digest, got.Listing)
		}
		if want.Digest == prev {
			t.Errorf("%s: digest did not change", s.name)
		}
		prev = want.Digest
	}
}

func TestStatCacheCorrupt(t *testing.T) {
	t.Parallel()
	root := cacheTree(t, 8)
	c := NewStatCache()
	want := mustTree(t, root, TreeOptions{Cache: c})
	// A cache whose every digest is wrong: trusting it would change the
	// tree digest.
	for _, d := range c.dirs {
		for i := range d.kids {
			d.kids[i].sum[0] ^= 0xff
		}
	}
	c.summary.digest[0] ^= 0xff
	good := c.encode()
	body := good[:len(good)-statCacheSumSize]

	// A well-formed header, then bytes.
	hdr := func(rest ...byte) []byte {
		b := append([]byte(statCacheMagic), make([]byte, 8)...)
		b = append(b, 0, 0, 0) // root "", skip "", no summary
		return appendSum(append(b, rest...))
	}
	cases := map[string][]byte{
		"flipped byte":     flip(good, len(good)/2),
		"truncated":        good[:len(good)-40],
		"empty":            {},
		"other version":    appendSum([]byte(strings.Replace(string(body), "-v3\n", "-v9\n", 1))),
		"version 1":        appendSHA256([]byte(strings.Replace(string(body), "-v3\n", "-v1\n", 1))),
		"not a cache":      []byte("{\"entries\": []}\n" + strings.Repeat("x", 100)),
		"trailing bytes":   appendSum(append(append([]byte{}, body...), 0)),
		"huge count":       hdr(binary.AppendUvarint(nil, 1<<40)...),
		"truncated record": hdr(1, 0),
		// One directory: path "", stat data, one entry "a" of kind k.
		"bad entry kind":             hdr(oneEntry(1, 'z')...),
		"entries past the total":     hdr(oneEntry(0, 'o')...),
		"entries short of the total": hdr(oneEntry(2, 'o')...),
	}
	cases["duplicate dir"] = hdr(append(append(append(append([]byte{2, 0, 0}, make([]byte, statKeySize)...), 0, 0), make([]byte, statKeySize)...), 0)...)
	dir := t.TempDir()
	for name, data := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".bin")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadStatCache(path)
		if !errors.Is(err, ErrStatCacheCorrupt) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want ErrStatCacheCorrupt naming %s", name, err, path)
		}
		if loaded == nil || loaded.Len() != 0 {
			t.Fatalf("%s: loaded cache %v, want an empty one", name, loaded)
		}
		tr := mustTree(t, root, TreeOptions{Cache: loaded})
		if tr.Hashed != 8 || tr.Digest != want.Digest {
			t.Errorf("%s: hashed %d digest %s; want 8 %s", name, tr.Hashed, tr.Digest, want.Digest)
		}
	}

	// The same bytes with their checksum intact are trusted, which is what
	// makes the cases above meaningful.
	path := filepath.Join(dir, "wrong-digests.bin")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadStatCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr := mustTree(t, root, TreeOptions{Cache: loaded}); tr.Hashed != 0 || tr.Digest == want.Digest {
		t.Errorf("well-formed cache not trusted: hashed %d", tr.Hashed)
	}
}

// oneEntry is the directory part of a cache file: one directory, root,
// with one entry "a" of kind kind, its entry total given as total.
func oneEntry(total byte, kind byte) []byte {
	b := append([]byte{1, total, 0}, make([]byte, statKeySize)...)
	b = append(b, 1, 1, 'a', kind, 0)
	return append(b, make([]byte, statKeySize)...)
}

// TestStatCacheEveryByte damages a saved cache one byte at a time, at
// every offset and in three ways: each damaged file must be refused as
// corrupt, never loaded with entries.
func TestStatCacheEveryByte(t *testing.T) {
	t.Parallel()
	root := cacheTree(t, 8)
	c := NewStatCache()
	mustTree(t, root, TreeOptions{Cache: c})
	good := c.encode()
	if _, err := decodeStatCache(good); err != nil {
		t.Fatalf("the undamaged cache: %v", err)
	}
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := append([]byte{}, good...)
			bad[i] ^= x
			if d, err := decodeStatCache(bad); err == nil {
				t.Fatalf("byte %d of %d xor %#x: loaded with %d files, want an error", i, len(good), x, d.Len())
			}
		}
	}
}

// TestStatCacheEntriesApart checks that the directories of a loaded
// cache, which share one array of entries, cannot write into each other:
// appending to one directory's entries leaves the next one's as they were.
func TestStatCacheEntriesApart(t *testing.T) {
	t.Parallel()
	root := cacheTree(t, 8)
	c := NewStatCache()
	mustTree(t, root, TreeOptions{Cache: c})
	path := filepath.Join(t.TempDir(), "tree.bin")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadStatCache(path)
	if err != nil {
		t.Fatal(err)
	}
	rels := slices.Sorted(maps.Keys(loaded.dirs))
	if len(rels) < 2 {
		t.Fatalf("tree has %d directories, want at least 2", len(rels))
	}
	before := map[string][]kidRecord{}
	for _, rel := range rels {
		before[rel] = slices.Clone(loaded.dirs[rel].kids)
	}
	for _, rel := range rels {
		d := loaded.dirs[rel]
		d.kids = append(d.kids, kidRecord{name: "\xff-appended", kind: 'o'})
	}
	for _, rel := range rels {
		got := loaded.dirs[rel].kids
		if !slices.EqualFunc(got[:len(got)-1], before[rel], func(a, b kidRecord) bool { return a.equal(&b) }) {
			t.Errorf("directory %q: entries changed by an append to another: %v, want %v", rel, got, before[rel])
		}
	}
}

func flip(b []byte, i int) []byte {
	b = append([]byte{}, b...)
	b[i] ^= 0x01
	return b
}

func appendSum(b []byte) []byte {
	sum := statCacheSum(b)
	return append(b, sum[:]...)
}

// appendSHA256 ends b the way version 1 of the format did.
func appendSHA256(b []byte) []byte {
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}
