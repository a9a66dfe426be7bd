package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: any mcpepoch.toml either loads or gives an *Error naming the
// file, never a panic; a loaded one has a usable grace.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"label = \"inv\"\ncommand = [\"node\", \"dist/server.js\"]\n[host]\ngrace = \"2s\"\nrestart = \"keep\"\n",
		"env_files = [\".env\"]\nlockfiles = [\"package-lock.json\"]\n[grants]\nexempt = [\"inventory_*\"]\n",
		"[credentials.github]\ntools = [\"gh_*\"]\nper_call = true\n",
		"[host]\ngrace = \"-1s\"\n",
		"[grants]\nexempt = [\"[\"]\n",
		"comand = 1\n",
		"label = \n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(dir)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Load: %T %v, want an *Error", err, err)
			}
			return
		}
		if g, err := c.Grace(); err != nil || g < 0 {
			t.Fatalf("a loaded config has grace %v, %v", g, err)
		}
	})
}
