package build

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envLinks makes n symbolic links to target in a new directory and
// returns their paths.
func envLinks(t *testing.T, target string, n int) []string {
	t.Helper()
	d := idTempDir(t)
	var out []string
	for i := range n {
		l := filepath.Join(d, fmt.Sprintf("l%d", i))
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// NODE_PATH entries that are symbolic links to one directory (and the
// directory itself) are one search-path directory: hashed once, under the
// first entry naming it, and an edit in it is still new code.
func TestIdentityNodePathLinksDeduplicated(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	np := idTempDir(t)
	idWrite(t, np, idFile{path: "helper/index.js", content: "module.exports = 'one';\n"})
	links := envLinks(t, np, 100)
	value := "NODE_PATH=" + strings.Join(append(links, np), ":")
	spec := idSpec(dir, idFakeBin(t, "a"), value, "HOME="+idTempDir(t))
	before := idCompute(t, spec)
	if len(before.Deps) != 2 {
		t.Fatalf("deps %+v, want node_modules and the NODE_PATH directory once", before.Deps)
	}
	if a, ok := depArtifact(before, links[0]); !ok || a.Files != 1 {
		t.Fatalf("deps %+v: want the directory under its first entry %s, 1 file", before.Deps, links[0])
	}
	for _, s := range before.Inferred {
		if strings.Contains(s, "not hashed, past the bound") {
			t.Errorf("inferred %q: a hundred links to one directory are one directory", s)
		}
	}
	idWrite(t, np, idFile{path: "helper/index.js", content: "module.exports = 'two';\n"})
	idWantChanges(t, before, idCompute(t, spec), filepath.ToSlash(links[0]))
}

// Distinct search-path directories past the bound (of directories, or of
// entries read) are not hashed, and the explanation says so once, naming
// the variable and the bound.
func TestIdentityEnvDirsBound(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	np := idTempDir(t)
	var entries []string
	for i := range envDirLimit + 6 {
		d := fmt.Sprintf("d%02d", i)
		idWrite(t, np, idFile{path: d + "/m.js", content: "1;\n"})
		entries = append(entries, filepath.Join(np, d))
	}
	for _, c := range []struct {
		limit, hashed int
	}{{0, envDirLimit}, {4, 10}} { // 4: 20 entries read, 2 for each directory of one file
		spec := idSpec(dir, idFakeBin(t, "a"), "NODE_PATH="+strings.Join(entries, ":"), "HOME="+idTempDir(t))
		spec.envTreeLimit = c.limit
		id := idCompute(t, spec)
		if got := len(id.Deps) - 1; got != c.hashed {
			t.Errorf("limit %d: %d NODE_PATH directories hashed, want %d", c.limit, got, c.hashed)
		}
		var notes []string
		for _, s := range id.Inferred {
			if strings.Contains(s, "past the bound") {
				notes = append(notes, s)
			}
		}
		want := fmt.Sprintf("NODE_PATH: %d more directories not hashed, past the bound of %d directories", len(entries)-c.hashed, envDirLimit)
		if len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
			t.Errorf("limit %d: notes %q, want one starting %q", c.limit, notes, want)
		}
	}
}
