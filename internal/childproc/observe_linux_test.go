package childproc

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
)

func digestOf(b []byte) build.Digest {
	h := sha256.New()
	h.Write(b)
	return build.NewDigest(h)
}

// An executable's digest is taken from the cache only while the file's
// stat data is what it was when hashed: rewritten with other bytes of the
// same size, it is hashed again, and so is one changed within the racy
// window of its hashing.
func TestExeDigestCache(t *testing.T) {
	was := racyWindow
	racyWindow = 50 * time.Millisecond
	t.Cleanup(func() { racyWindow = was })
	c := exeCache{m: map[exeKey]exeEntry{}}
	path := filepath.Join(t.TempDir(), "server")
	a, b := []byte(strings.Repeat("a", 4096)), []byte(strings.Repeat("b", 4096))
	if err := os.WriteFile(path, a, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := c.digest(path); got != digestOf(a) {
		t.Fatalf("digest %s, want %s", got, digestOf(a))
	}
	time.Sleep(2 * racyWindow)
	if got := c.digest(path); got != digestOf(a) { // hashed again: the first was racy
		t.Fatalf("digest %s, want %s", got, digestOf(a))
	}
	if err := os.WriteFile(path, b, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := c.digest(path); got != digestOf(b) {
		t.Errorf("after a rewrite of the same size: digest %s, want %s (a stale entry was used)", got, digestOf(b))
	}
}

// BenchmarkObserveExe measures the digest of a running server's
// executable at each of its starts: from the cache, against hashed anew
// (a Go server of a few MB here; node's is about 100 MB).
func BenchmarkObserveExe(b *testing.B) {
	exe := "/proc/self/exe"
	was := racyWindow
	racyWindow = 0 // the test binary was just built: its entry stands all the same
	b.Cleanup(func() { racyWindow = was })
	b.Run("cached", func(b *testing.B) {
		c := exeCache{m: map[exeKey]exeEntry{}}
		c.digest(exe)
		for b.Loop() {
			c.digest(exe)
		}
	})
	b.Run("hashed", func(b *testing.B) {
		for b.Loop() {
			c := exeCache{m: map[exeKey]exeEntry{}}
			c.digest(exe)
		}
	})
}
