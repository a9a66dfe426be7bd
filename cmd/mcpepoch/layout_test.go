package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// TestStateDirPrivateWhicheverCommandFirst checks that .mcpepoch/ and every
// directory in it are mode 0700 whichever command makes them first: the
// hook (manifest, lock, cache) or the host (sockets, audit log, grants,
// execution records). Under the usual umask 022 a directory made 0755 by
// one of them would stay 0755.
func TestStateDirPrivateWhicheverCommandFirst(t *testing.T) {
	t.Parallel()
	for _, first := range [][]string{
		{"record"},
		{"host", "--", "sh", "server.sh"},
	} {
		t.Run(first[0], func(t *testing.T) {
			root := shortRoot(t)
			files := map[string]string{
				"mcpepoch.toml": "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\n",
				"server.sh":     "exec cat\n",
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The host reads no client message (stdin is empty) and ends.
			runCLI(t, append([]string{first[0], "--dir", root}, first[1:]...)...)
			runCLI(t, "record", "--dir", root)
			n := 0
			err := filepath.WalkDir(layout.Dir(root), func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return err
				}
				n++
				fi, err := d.Info()
				if err == nil && fi.Mode().Perm() != layout.DirMode {
					t.Errorf("%s is %v, want %v", p, fi.Mode().Perm(), layout.DirMode)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(layout.Cache(root)); err != nil || n < 2 {
				t.Errorf("%d directories checked under %s (cache: %v), want .mcpepoch and its cache at least", n, layout.Dir(root), err)
			}
		})
	}
}
