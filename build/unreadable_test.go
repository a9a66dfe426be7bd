package build

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A server directory whose package.json is a FIFO or a link to /dev/zero
// does not hang or exhaust the script lookup: the file is skipped.
func TestScriptPathUnreadablePackageJSON(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"fifo":     func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"dev-zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "srv"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := mk(filepath.Join(dir, "srv", "package.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan string, 1)
			go func() { done <- scriptPath(dir, "srv", launchArgs{known: true, runtime: "node", script: "srv"}) }()
			select {
			case got := <-done:
				if got != "srv" {
					t.Errorf("scriptPath = %q, want srv (nothing found)", got)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("scriptPath still blocked after 5s")
			}
		})
	}
}
