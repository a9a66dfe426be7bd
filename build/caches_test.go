package build

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCachesInMemory: with Spec.Caches, Compute neither reads nor writes
// Spec.CacheDir, gives every concurrent caller the same identity, and
// sees a file changed after its digest was kept.
func TestCachesInMemory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"server.js": "s", "dist/a.js": "a", "dist/b/c.js": "c"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cacheDir := filepath.Join(dir, "cache")
	spec := Spec{Dir: dir, Entry: "server.js", Code: []string{"dist"}, Lockfiles: []string{}, Deps: []string{},
		CacheDir: cacheDir, Caches: NewCaches()}
	compute := func() (entry, code Digest) {
		t.Helper()
		id, err := Compute(spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(id.Code) != 1 {
			t.Fatalf("code %+v, want dist", id.Code)
		}
		return id.Entry.Digest, id.Code[0].Digest
	}
	e0, c0 := compute()
	time.Sleep(2500 * time.Millisecond) // past the racy window: the next digests are kept
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if e, c := compute(); e != e0 || c != c0 {
				t.Errorf("concurrent Compute: entry %s code %s, want %s %s", e, c, e0, c0)
			}
		})
	}
	wg.Wait()
	if _, err := os.Stat(cacheDir); !os.IsNotExist(err) {
		t.Fatalf("Compute with Caches touched CacheDir: %v", err)
	}
	if len(spec.Caches.files) == 0 || len(spec.Caches.trees) != 1 {
		t.Fatalf("caches hold %d files, %d trees: want the entry's and dist", len(spec.Caches.files), len(spec.Caches.trees))
	}
	for name, content := range map[string]string{"server.js": "S", "dist/b/c.js": "C"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if e, c := compute(); e == e0 || c == c0 {
		t.Fatalf("after an edit: entry %s (was %s), code %s (was %s): want both changed", e, e0, c, c0)
	}
}
