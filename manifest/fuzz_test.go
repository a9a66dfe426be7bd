package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzRead: any manifest file either reads as a valid manifest or gives an
// error, never a panic; one that reads is encoded as Write does and reads
// again.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`schema = 1
label = "inventory-local"
command = ["node", "dist/server.js"]
dir = "/home/me/inventory"

[build]
id = "01JQ7R9KQ6K2Y8W4JH0M3T5V7X"
completed = 2026-07-22T14:31:08Z
status = "ok"
exit_code = 0

[[artifact]]
role = "entry"
path = "dist/server.js"
digest = "sha256:9e4c5f0b0d4b8c1e5e6a7c1f3b2a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"
size = 10240
`))
	f.Add([]byte("schema = 1\n[build]\nid = \"x\"\nstatus = \"failed\"\n[[gone]]\nrole = \"lockfile\"\npath = \"package-lock.json\"\n"))
	f.Add([]byte("schema = 2\n"))
	f.Add([]byte("label = fixture\n"))
	f.Add([]byte("schema = 1\n[build]\nid = \"x\"\nstatus = \"ok\"\nexit_code = 1e400\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "manifest.toml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Read(p)
		if err != nil {
			return
		}
		// What Write writes, without its fsyncs.
		if err := m.validate(); err != nil {
			t.Fatalf("a manifest that reads does not validate: %v", err)
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(m); err != nil {
			t.Fatalf("a manifest that reads does not encode: %v", err)
		}
		q := filepath.Join(dir, "again.toml")
		if err := os.WriteFile(q, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(q); err != nil {
			t.Fatalf("a manifest written from one that reads does not read: %v", err)
		}
	})
}
