package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ideDeps returns the digests of the dependency trees of `mcpepoch
// identity --json` run in dir with env, by path.
func ideDeps(t *testing.T, dir string, env []string) map[string]string {
	t.Helper()
	o, _ := ideMust(t, dir, env, "identity", "--json")
	var id struct {
		Deps []struct{ Path, Digest string }
	}
	if err := json.Unmarshal([]byte(o), &id); err != nil {
		t.Fatalf("identity --json: %v\n%s", err, o)
	}
	out := map[string]string{}
	for _, a := range id.Deps {
		out[a.Path] = a.Digest
	}
	return out
}

// A NODE_PATH of two hundred symbolic links to one folder of more than
// 10,000 packages, then seventy small directories: identity finishes,
// hashes the big folder once (shallowly), says once which directories
// are past the bound, and an edit in a hashed directory still shows.
func TestIdentityNodePathBounded(t *testing.T) {
	t.Parallel()
	dir, out := ideTempDir(t), ideTempDir(t)
	ideWrite(t, dir, "server.js", "process.stdin.resume();\n", 0o644)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"np\"\ncommand = [\"node\", \"server.js\"]\n", 0o644)
	big := filepath.Join(out, "big")
	for i := range 10050 {
		if err := os.MkdirAll(filepath.Join(big, fmt.Sprintf("p%05d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var np []string
	for i := range 200 {
		l := filepath.Join(out, "links", fmt.Sprintf("l%d", i))
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(big, l); err != nil {
			t.Fatal(err)
		}
		np = append(np, l)
	}
	for i := range 70 {
		d := filepath.Join(out, "small", fmt.Sprintf("d%02d", i))
		ideWrite(t, d, "m.js", "1;\n", 0o644)
		np = append(np, d)
	}
	env := []string{"NODE_PATH=" + strings.Join(np, ":")}

	o, _ := ideMust(t, dir, env, "identity")
	if n := strings.Count(o, "hashed shallowly"); n != 1 {
		t.Errorf("identity says %d times that a directory is hashed shallowly, want once:\n%s", n, o)
	}
	const note = "NODE_PATH: 7 more directories not hashed, past the bound of 64 directories and 50000 entries"
	if n := strings.Count(o, note); n != 1 {
		t.Errorf("identity has %d notes %q, want one:\n%s", n, note, o)
	}

	before := ideDeps(t, dir, env)
	first, small := filepath.ToSlash(np[0]), filepath.ToSlash(np[200])
	if before[first] == "" || before[small] == "" || len(before) != 64 {
		t.Fatalf("deps %v: want 64, among them %s and %s", before, first, small)
	}
	ideWrite(t, big, "new.js", "2;\n", 0o644)
	ideWrite(t, np[200], "m.js", "3;\n", 0o644)
	after := ideDeps(t, dir, env)
	for _, p := range []string{first, small} {
		if after[p] == before[p] {
			t.Errorf("deps %s: digest %s unchanged after an edit in it", p, after[p])
		}
	}
}
