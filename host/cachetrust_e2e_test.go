package host_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
)

// forgeProject is a project whose entry is the fixture binary itself,
// with a code tree dist, and no host yet.
func forgeProject(t *testing.T) *project {
	t.Helper()
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "command = [\"./bin/fixture\"]\ncode = [\"dist\"]\n\n[grants]\nexempt = [\"**\"]\n")
	if err := os.MkdirAll(p.path("dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("dist/index.js", "one")
	return p
}

// diskIdentity is the identity the hook computes, with the on-disk caches
// of .mcpepoch/cache (read, and written when they change).
func (p *project) diskIdentity() (entry, code build.Digest) {
	p.t.Helper()
	id, err := build.Compute(build.Spec{Dir: p.dir, Command: []string{"./bin/fixture"}, Code: []string{"dist"},
		CacheDir: p.path(".mcpepoch/cache")})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, a := range id.Code {
		if a.Path == "dist" {
			return id.Entry.Digest, a.Digest
		}
	}
	p.t.Fatalf("identity has no code tree dist: %+v", id.Code)
	return "", ""
}

// forgeCaches is what any process of the user can do: it edits the entry
// and a file of the code tree, lets the hook's caches record the new stat
// data (past the racy window), then puts the old digests back beside it,
// in files.json and in the code tree's stat cache (checksum recomputed).
// It returns the real digests of the entry and the tree, after checking
// that the hook's identity now names the old ones. With entryOnly, the
// code tree is left alone.
func (p *project) forgeCaches(entryOnly bool) (entry, code build.Digest) {
	p.t.Helper()
	oldEntry, oldCode := p.diskIdentity()
	bin, err := os.ReadFile(p.path("bin/fixture"))
	if err != nil {
		p.t.Fatal(err)
	}
	p.write("bin/fixture", string(append(bin, "rebuilt"...))) // still runs: ELF ignores what follows
	if err := os.Chmod(p.path("bin/fixture"), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if !entryOnly {
		if err := os.WriteFile(p.path("dist/index.js"), []byte("two"), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	time.Sleep(2500 * time.Millisecond) // past the caches' racy window
	entry, code = p.diskIdentity()
	if entry == oldEntry || (code == oldCode) != entryOnly {
		p.t.Fatalf("the edit changed nothing: entry %s, code %s", entry, code)
	}

	files := p.path(".mcpepoch/cache/files.json")
	var fc map[string]any
	dec := json.NewDecoder(strings.NewReader(p.read(".mcpepoch/cache/files.json")))
	dec.UseNumber() // stat times in ns do not fit a float64
	if err := dec.Decode(&fc); err != nil {
		p.t.Fatalf("files.json: %v", err)
	}
	e, ok := fc["files"].(map[string]any)[p.path("bin/fixture")].(map[string]any)
	if !ok {
		p.t.Fatalf("files.json has no entry for bin/fixture:\n%s", p.read(".mcpepoch/cache/files.json"))
	}
	e["digest"] = string(oldEntry)
	b, err := json.Marshal(fc)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(files, b, 0o600); err != nil {
		p.t.Fatal(err)
	}

	if !entryOnly {
		p.forgeTree(code, oldCode)
	}
	p.checkForged(oldEntry, oldCode)
	return entry, code
}

// forgeTree puts the old digests of dist/index.js and of dist back into
// the code tree's stat cache.
func (p *project) forgeTree(code, oldCode build.Digest) {
	p.t.Helper()
	caches, _ := filepath.Glob(p.path(".mcpepoch/cache/code-*.cache"))
	if len(caches) != 1 {
		p.t.Fatalf("code tree stat caches %q, want one", caches)
	}
	forgeStatCache(p.t, caches[0], map[build.Digest]build.Digest{
		build.DigestBytes([]byte("two")): build.DigestBytes([]byte("one")), code: oldCode})
}

// checkForged asserts that the hook's identity takes the forged caches.
func (p *project) checkForged(oldEntry, oldCode build.Digest) {
	p.t.Helper()
	if e, c := p.diskIdentity(); e != oldEntry || c != oldCode {
		p.t.Fatalf("forged caches not taken by the hook's identity: entry %s (old %s), code %s (old %s)", e, oldEntry, c, oldCode)
	}
}

// forgeStatCache replaces, in the stat cache file at path, each digest of
// swap (raw bytes) by its value and recomputes the checksum that ends the
// file: whichever of CRC-32 IEEE and Castagnoli build.LoadStatCache takes.
func forgeStatCache(t testing.TB, path string, swap map[build.Digest]build.Digest) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(d build.Digest) []byte {
		r, err := hex.DecodeString(strings.TrimPrefix(string(d), "sha256:"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	body := b[:len(b)-4]
	for from, to := range swap {
		if !bytes.Contains(body, raw(from)) {
			t.Fatalf("stat cache %s holds no digest %s", path, from)
		}
		body = bytes.ReplaceAll(body, raw(from), raw(to))
	}
	for _, tab := range []*crc32.Table{crc32.IEEETable, crc32.MakeTable(crc32.Castagnoli)} {
		out := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, tab))
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := build.LoadStatCache(path); err == nil {
			return
		}
	}
	t.Fatalf("stat cache %s: no checksum makes the forged file load", path)
}

// lastStartedEntry is the entry digest of the last server_started record.
func (p *project) lastStartedEntry() string {
	p.t.Helper()
	recs := p.auditRecords("server_started")
	if len(recs) == 0 {
		p.t.Fatal("no server_started record")
	}
	s, _ := recs[len(recs)-1].Fields["entry"].(string)
	return s
}

// manifestNames asserts that the manifest records tree with digest d.
func (p *project) manifestNames(tree string, d build.Digest) {
	p.t.Helper()
	if m := p.read(".mcpepoch/manifest.toml"); !regexp.MustCompile(`(?s)path = "` + tree + `"\s*digest = "` + regexp.QuoteMeta(string(d)) + `"`).MatchString(m) {
		p.t.Fatalf("the manifest does not record %s as %s:\n%s", tree, d, m)
	}
}

// TestHostIgnoresForgedCaches: with the host running, the entry and a code
// tree change and their entries in the on-disk caches are forged to keep
// the old digests. The hook's own identity is fooled, the host's is not:
// it restarts the server under a new epoch, and server_started names the
// entry's real digest.
func TestHostIgnoresForgedCaches(t *testing.T) {
	t.Parallel()
	p := forgeProject(t)
	c := startRaw(t, p, nil, "./bin/fixture")
	c.initialize()
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	first := p.recordJSON()
	if len(first.Hosts) != 1 {
		t.Fatalf("first record: hosts %+v", first.Hosts)
	}
	entry, code := p.forgeCaches(false)
	r := p.recordJSON()
	if len(r.Hosts) != 1 || r.Hosts[0].Result != "restarted" || r.Hosts[0].NewEpoch == first.Hosts[0].NewEpoch {
		t.Fatalf("after the forgery: record reports %q changed, hosts %+v; want the server restarted under a new epoch", r.Changed, r.Hosts)
	}
	if got := p.lastStartedEntry(); got != string(entry) {
		t.Fatalf("server_started names entry %s, want the real digest %s", got, entry)
	}
	p.manifestNames("dist", code) // the hook took the tree from the host
}

// TestHostStartedAfterForgery: a host started after the caches were forged
// hashes what it runs itself: server_started names the entry's real
// digest and the trees it answers the hook with are the real ones.
func TestHostStartedAfterForgery(t *testing.T) {
	t.Parallel()
	p := forgeProject(t)
	p.recordJSON()
	entry, code := p.forgeCaches(false)
	c := startRaw(t, p, nil, "./bin/fixture")
	c.initialize()
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	if got := p.lastStartedEntry(); got != string(entry) {
		t.Fatalf("server_started names entry %s, want the real digest %s", got, entry)
	}
	if r := p.recordJSON(); r.TreesFrom == "" {
		t.Fatalf("record took no trees from the host: %+v", r)
	}
	p.manifestNames("dist", code)
}

// TestRecordSaysWhatHostFound: with the entry's cache entry forged, record's
// own hashing finds nothing changed; the host restarts the server, and
// record says that the host found the entry changed.
func TestRecordSaysWhatHostFound(t *testing.T) {
	t.Parallel()
	p := forgeProject(t)
	c := startRaw(t, p, nil, "./bin/fixture")
	c.initialize()
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	p.recordJSON()
	p.forgeCaches(true)
	out := p.cli("record", "--dir", p.dir)
	for _, want := range []string{"build complete: nothing changed", "server restarted: epoch",
		"the host found bin/fixture changed, where this build found nothing changed"} {
		if !strings.Contains(out.Stderr, want) {
			t.Fatalf("record's output lacks %q:\n%s", want, out)
		}
	}
}
