package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatCacheIgnoredNote checks what Compute says of a damaged stat
// cache: one inferred line naming the file once, and the same identity
// as from an intact cache.
func TestStatCacheIgnoredNote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	idWrite(t, dir, idFile{path: "dist/server.js", content: "require('./lib.js');\n"}, idFile{path: "dist/lib.js", content: "module.exports = 1;\n"})
	bin := t.TempDir()
	idWrite(t, bin, idFile{path: "node", content: "\x7fELF fake node\n", mode: 0o755})
	spec := Spec{Dir: dir, Command: []string{"node", "dist/server.js"}, Versions: idVersions,
		Environ: []string{"PATH=" + bin}, CacheDir: t.TempDir()}
	want, err := Compute(spec)
	if err != nil {
		t.Fatal(err)
	}
	caches, _ := filepath.Glob(filepath.Join(spec.CacheDir, "code-*.cache"))
	if len(caches) != 1 {
		t.Fatalf("code tree stat caches %v, want one", caches)
	}
	if err := os.WriteFile(caches[0], []byte("mcpepoch-statcache-v3\ndamaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Compute(spec)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, s := range got.Inferred {
		if strings.Contains(s, caches[0]) {
			notes = append(notes, s)
		}
	}
	if len(notes) != 1 || strings.Count(notes[0], caches[0]) != 1 || !strings.Contains(notes[0], "corrupt stat cache") || !strings.Contains(notes[0], "ignored") {
		t.Errorf("inferred %q, want one line naming %s once, saying it is corrupt and ignored", got.Inferred, caches[0])
	}
	if got.Code[0].Digest != want.Code[0].Digest {
		t.Errorf("code digest %s from a damaged cache, want %s", got.Code[0].Digest, want.Code[0].Digest)
	}
}
