package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenLogSaysWhenTheDirectoryNeedsSyncing: the directory is fsynced
// for a log Open creates, or finds empty, and not for one with records in
// it, whose creator synced it.
func TestOpenLogSaysWhenTheDirectoryNeedsSyncing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "builds.jsonl")
	for _, step := range []struct {
		what    string
		prepare func()
		created bool
	}{
		{"missing", func() {}, true},
		{"empty", func() {}, true},
		{"with a record", func() { os.WriteFile(p, []byte("{}\n"), 0o600) }, false},
	} {
		step.prepare()
		f, created, err := openLog(p)
		if err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		f.Close()
		if created != step.created {
			t.Errorf("%s log: created = %v, want %v", step.what, created, step.created)
		}
	}
}
