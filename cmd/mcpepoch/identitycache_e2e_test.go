package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
)

// TestIdentityReadsEveryFile: identity hashes what the host would, with
// no cache: an entry whose files.json entry was forged to keep its old
// digest beside its new stat data shows its real digest, and only
// --cached takes the forged one.
func TestIdentityReadsEveryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	entry := filepath.Join(dir, "server.js")
	if err := os.WriteFile(entry, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcpepoch.toml"), []byte("command = [\"node\", \"server.js\"]\ncode = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entryDigest := func(args ...string) build.Digest {
		t.Helper()
		out, errOut, code := ideRun(t, dir, nil, append([]string{"identity", "--json", "--dir", dir}, args...)...)
		var id build.Identity
		if code != 0 || json.Unmarshal([]byte(out), &id) != nil {
			t.Fatalf("identity %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return id.Entry.Digest
	}
	old := entryDigest("--cached")
	if err := os.WriteFile(entry, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past the cache's racy window
	real := entryDigest("--cached")     // the cache now holds the new stat data
	if old == "" || real == old {
		t.Fatalf("entry digests %q before and %q after the edit", old, real)
	}
	cache := filepath.Join(dir, ".mcpepoch", "cache", "files.json")
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, []byte(strings.ReplaceAll(string(b), string(real), string(old))), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := entryDigest("--cached"); got != old {
		t.Fatalf("identity --cached: entry %s, want the forged %s", got, old)
	}
	if got := entryDigest(); got != real {
		t.Fatalf("identity: entry %s, want the real digest %s (forged: %s)", got, real, old)
	}
}
