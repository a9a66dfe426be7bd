package build

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fcForge rewrites the digest the cache file at path holds for file to d,
// through the documented on-disk format. A later Digest that returns d has
// not read file; one that returns the real digest has.
func fcForge(t *testing.T, path, file string, d Digest) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f fileCacheFormat
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	e, ok := f.Files[file]
	if !ok {
		t.Fatalf("%s holds no entry for %s: %s", path, file, b)
	}
	e.Digest = d
	f.Files[file] = e
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fcForged is a digest no file here has.
var fcForged = DigestBytes([]byte("forged: never the content of a test file"))

// fcRecord hashes files through a new cache at path and saves it.
func fcRecord(t *testing.T, path string, files ...string) {
	t.Helper()
	c, err := LoadFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, _, err := c.Digest(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
}

// fcDigest loads the cache at path and returns its digest of file.
func fcDigest(t *testing.T, path, file string) Digest {
	t.Helper()
	c, err := LoadFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	d, n, err := c.Digest(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || n != fi.Size() {
		t.Errorf("size %d, file has %v (%v)", n, fi.Size(), err)
	}
	return d
}

func fcFileDigest(t *testing.T, p string) Digest {
	t.Helper()
	d, _, err := FileDigest(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFileCacheStatRules covers files old enough for the cache to trust
// (one wait for all of them).
func TestFileCacheStatRules(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	names := []string{"unchanged", "rewritten", "replaced", "chmod", "grown"}
	for _, n := range names {
		idWrite(t, dir, idFile{path: n, content: "content of " + n + "\n", mode: 0o755})
	}
	idAge()
	cache := filepath.Join(dir, "cache", "files.json")
	var files []string
	for _, n := range names {
		files = append(files, filepath.Join(dir, n))
	}
	fcRecord(t, cache, files...)
	for _, f := range files {
		fcForge(t, cache, f, fcForged)
	}
	file := func(n string) string { return filepath.Join(dir, n) }

	t.Run("unchanged file is not read", func(t *testing.T) {
		if d := fcDigest(t, cache, file("unchanged")); d != fcForged {
			t.Errorf("digest %s: the file was read again though its stat data is unchanged and old", d)
		}
	})
	t.Run("content rewritten, mtime put back", func(t *testing.T) {
		idRewrite(t, file("rewritten"), "CONTENT OF rewritten\n")
		if d, want := fcDigest(t, cache, file("rewritten")), fcFileDigest(t, file("rewritten")); d != want {
			t.Errorf("digest %s, want %s: a changed ctime must miss the cache", d, want)
		}
	})
	t.Run("replaced by rename, same size and mtime", func(t *testing.T) {
		fi, err := os.Stat(file("replaced"))
		if err != nil {
			t.Fatal(err)
		}
		idWrite(t, dir, idFile{path: "replaced.new", content: "CONTENT OF replaced\n", mode: 0o755})
		if err := os.Chtimes(file("replaced.new"), fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file("replaced.new"), file("replaced")); err != nil {
			t.Fatal(err)
		}
		if d, want := fcDigest(t, cache, file("replaced")), fcFileDigest(t, file("replaced")); d != want {
			t.Errorf("digest %s, want %s: another inode must miss the cache", d, want)
		}
	})
	t.Run("mode changed", func(t *testing.T) {
		if err := os.Chmod(file("chmod"), 0o644); err != nil {
			t.Fatal(err)
		}
		if d := fcDigest(t, cache, file("chmod")); d == fcForged {
			t.Errorf("digest from the cache though the file's mode changed")
		}
	})
	t.Run("appended", func(t *testing.T) {
		f, err := os.OpenFile(file("grown"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("more\n")
		f.Close()
		if d, want := fcDigest(t, cache, file("grown")), fcFileDigest(t, file("grown")); d != want {
			t.Errorf("digest %s, want %s", d, want)
		}
	})
}

// A file changed within racyWindow of the moment it was hashed may keep its
// stat data across a change, so its entry is not trusted: it is read again.
func TestFileCacheRacyFileReread(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	f := filepath.Join(dir, "fresh.js")
	idWrite(t, dir, idFile{path: "fresh.js", content: "v1\n"})
	cache := filepath.Join(dir, "files.json")
	fcRecord(t, cache, f)
	fcForge(t, cache, f, fcForged)
	if d, want := fcDigest(t, cache, f), fcFileDigest(t, f); d != want {
		t.Fatalf("digest %s, want %s: a file as young as its entry must be read again", d, want)
	}

	// Once it is old, the entry recorded after the wait is trusted.
	idAge()
	fcRecord(t, cache, f)
	fcForge(t, cache, f, fcForged)
	if d := fcDigest(t, cache, f); d != fcForged {
		t.Errorf("digest %s: an old unchanged file was read again", d)
	}
}

func TestFileCacheCorrupt(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	f := filepath.Join(dir, "server.js")
	idWrite(t, dir, idFile{path: "server.js", content: "console.log(1);\n"})
	want := fcFileDigest(t, f)
	for name, content := range map[string]string{
		"garbage":     "\x00\x01 not json",
		"truncated":   `{"v":1,"files":{"` + f + `":{"dev":1,`,
		"version 2":   `{"v":2,"files":{}}`,
		"null files":  `{"v":1,"files":null}`,
		"empty":       ``,
		"wrong types": `{"v":1,"files":{"` + f + `":{"size":"big","digest":42}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "files.json")
			if err := os.WriteFile(cache, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := LoadFileCache(cache)
			if err == nil {
				t.Errorf("LoadFileCache of a corrupt file: no error")
			} else if !strings.Contains(err.Error(), cache) {
				t.Errorf("error %q does not name %s", err, cache)
			}
			if c == nil {
				t.Fatal("LoadFileCache returned no usable cache")
			}
			d, _, err := c.Digest(f)
			if err != nil || d != want {
				t.Fatalf("digest %s (%v), want %s", d, err, want)
			}
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadFileCache(cache); err != nil {
				t.Errorf("the cache Save replaced it with does not load: %v", err)
			}
		})
	}
}

// A forged entry whose stat data does not match the file is never used.
func TestFileCacheForeignEntryIgnored(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	f := filepath.Join(dir, "server.js")
	idWrite(t, dir, idFile{path: "server.js", content: "console.log(1);\n"})
	cache := filepath.Join(dir, "files.json")
	b, _ := json.Marshal(fileCacheFormat{V: 1, Files: map[string]fileCacheEntry{
		f: {Dev: 1, Ino: 2, Size: 16, Mtime: 1, Ctime: 1, Stamp: 1 << 62, Digest: fcForged},
	}})
	if err := os.WriteFile(cache, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := fcDigest(t, cache, f); d != fcFileDigest(t, f) {
		t.Errorf("digest %s from an entry that describes another file", d)
	}
}

// Through Compute: corrupt caches in Spec.CacheDir are ignored (said in
// Inferred), the identity is what reading every file gives, and the caches
// are rewritten.
func TestFileCacheCorruptThroughCompute(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	spec := idSpec(dir, idFakeBin(t, "a"))
	fresh := idCompute(t, spec)
	spec.CacheDir = filepath.Join(dir, ".mcpepoch", "cache")
	idCompute(t, spec)
	ents, err := os.ReadDir(spec.CacheDir)
	if err != nil || len(ents) < 2 {
		t.Fatalf("cache dir: %v %v, want files.json and a tree cache", ents, err)
	}
	for _, e := range ents {
		if err := os.WriteFile(filepath.Join(spec.CacheDir, e.Name()), []byte("corrupt"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	id := idCompute(t, spec)
	idWantChanges(t, fresh, id)
	if !hasInferred(id, "files.json ignored") || !hasInferred(id, ".cache ignored") {
		t.Errorf("inferred %q does not say the caches were ignored", id.Inferred)
	}
	if again := idCompute(t, spec); hasInferred(again, "ignored") {
		t.Errorf("the caches were not rewritten: %q", again.Inferred)
	}
}

// The runtime binary, cached, replaced on disk by rename with the same size
// and mtime: a new identity.
func TestFileCacheRuntimeReplaced(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	bin := idFakeBin(t, "a")
	spec := idSpec(dir, bin)
	spec.CacheDir = filepath.Join(dir, ".mcpepoch", "cache")
	idAge()
	before := idCompute(t, spec)
	idWantChanges(t, before, idCompute(t, spec))
	node := filepath.Join(bin, "node")
	fi, err := os.Stat(node)
	if err != nil {
		t.Fatal(err)
	}
	idWrite(t, bin, idFile{path: "node.new", content: "\x7fELF fake node b\n", mode: 0o755})
	if err := os.Chtimes(filepath.Join(bin, "node.new"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(bin, "node.new"), node); err != nil {
		t.Fatal(err)
	}
	idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(node))
}

// The Go build info of a cached file is kept in its entry and read from
// there while the entry stands for the file; a changed file is read again.
func TestFileCacheGoInfo(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	self, err := os.Executable() // a Go binary: this test's
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	idAge()
	cache := filepath.Join(dir, "files.json")
	c, _ := LoadFileCache(cache)
	if _, _, err := c.Digest(bin); err != nil {
		t.Fatal(err)
	}
	want := goInfo(bin)
	if gi := c.goInfo(bin); want == nil || gi == nil || *gi != *want {
		t.Fatalf("build info %+v, want %+v", gi, want)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	var f fileCacheFormat
	raw, _ := os.ReadFile(cache)
	if err := json.Unmarshal(raw, &f); err != nil || f.Files[bin].Go == nil || f.Files[bin].Go.Info == nil {
		t.Fatalf("cache file holds no build info for %s: %s (%v)", bin, raw, err)
	}
	f.Files[bin].Go.Info.Path = "forged/by/the/test"
	raw, _ = json.Marshal(f)
	os.WriteFile(cache, raw, 0o600)
	c, _ = LoadFileCache(cache)
	if gi := c.goInfo(bin); gi == nil || gi.Path != "forged/by/the/test" {
		t.Errorf("build info %+v: read from the file again though its entry stands", gi)
	}

	// The same size and mtime, other bytes: no longer a Go binary.
	idRewrite(t, bin, strings.Repeat("#", len(b)))
	if _, _, err := c.Digest(bin); err != nil {
		t.Fatal(err)
	}
	if gi := c.goInfo(bin); gi != nil {
		t.Errorf("build info %+v for a rewritten file that is not a Go binary", gi)
	}
}
