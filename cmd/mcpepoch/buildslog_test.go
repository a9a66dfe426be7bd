package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// TestRecordBuildsLogFailsLoudly: a build the builds log cannot take (here
// its lock is held by another writer) makes record fail naming the file,
// and the next record that can write puts a records_lost record in the
// chain, which audit verify warns about.
func TestRecordBuildsLogFailsLoudly(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	for name, body := range map[string]string{
		"mcpepoch.toml": "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\n",
		"server.sh":     "exec cat\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, code := runCLI(t, "record", "--dir", root); code != 0 {
		t.Fatalf("first record: exit %d", code)
	}
	lockPath := strings.TrimSuffix(layout.Builds(root), ".jsonl") + ".lock"
	lk, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "record", "--dir", root)
	lk.Close()
	if code != 1 || !strings.Contains(stderr, "build log "+layout.Builds(root)) || !strings.Contains(stderr, lockPath) {
		t.Fatalf("record with the builds log locked: exit %d, want 1 naming the log and its lock:\n%s", code, stderr)
	}
	if _, _, code := runCLI(t, "record", "--dir", root); code != 0 {
		t.Fatalf("record after the lock was released: exit %d", code)
	}
	stdout, _, code := runCLI(t, "audit", "verify", "--log", layout.Builds(root))
	if code != 0 || !strings.Contains(stdout, "records_lost: 1 record(s) (build_recorded 1)") {
		t.Fatalf("audit verify of the builds log: exit %d, want 0 with a records_lost warning:\n%s", code, stdout)
	}
}

// TestRecordNamesFilesWrittenIntoADependencyTree: a file written into a
// dependency tree after the previous build, with no lockfile changed, is
// named by the next record as the running server keeping its data there.
func TestRecordNamesFilesWrittenIntoADependencyTree(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	for name, body := range map[string]string{
		"mcpepoch.toml":             "label = \"fixture\"\ncommand = [\"node\", \"server.js\"]\n",
		"server.js":                 "require('pkg');\n",
		"node_modules/pkg/index.js": "module.exports = 1;\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, code := runCLI(t, "record", "--dir", root); code != 0 {
		t.Fatalf("first record: exit %d", code)
	}
	time.Sleep(1500 * time.Millisecond) // past the mtime granularity the note allows for
	if err := os.WriteFile(filepath.Join(root, "node_modules/pkg/memory.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "record", "--dir", root)
	if code != 0 || !strings.Contains(stderr, "note: node_modules/pkg/memory.jsonl changed after the last build") {
		t.Fatalf("record after a write into node_modules: exit %d, want a note naming the file:\n%s", code, stderr)
	}
}
