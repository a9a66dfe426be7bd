package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A manifest or mcpepoch.toml that is a FIFO, a link to /dev/zero or too
// large makes record exit 2 at once, naming the file and why; it neither
// hangs (a FIFO with no writer blocks open(2)) nor fills memory.
func TestRecordRefusesUnreadableFiles(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o600) }
	devZero := func(p string) error { return os.Symlink("/dev/zero", p) }
	huge := func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("# padding\n"), 500<<10), 0o600) }
	for _, tc := range []struct {
		name, file string
		make       func(string) error
		want       string
	}{
		{"manifest-fifo", ".mcpepoch/manifest.toml", fifo, `/\.mcpepoch/manifest\.toml: not a regular file \(a named pipe\)$`},
		{"manifest-dev-zero", ".mcpepoch/manifest.toml", devZero, `/\.mcpepoch/manifest\.toml: not a regular file \(a symbolic link\)$`},
		{"manifest-huge", ".mcpepoch/manifest.toml", huge, `/\.mcpepoch/manifest\.toml: larger than the 4 MiB limit for this file$`},
		{"config-fifo", "mcpepoch.toml", fifo, `/mcpepoch\.toml: not a regular file \(a named pipe\)$`},
		{"config-dev-zero", "mcpepoch.toml", devZero, `/mcpepoch\.toml: not a regular file \(a character device\)$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, ".mcpepoch"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte("exec cat\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.file != "mcpepoch.toml" {
				if err := os.WriteFile(filepath.Join(dir, "mcpepoch.toml"), []byte("command = [\"sh\", \"server.sh\"]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.make(filepath.Join(dir, tc.file)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "record")
			cmd.Dir, cmd.Env = dir, testenv.Environ()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("mcpepoch record still running after 20s; stderr:\n%s", stderr.Bytes())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("mcpepoch record: %v, want exit status 2; stderr:\n%s", err, stderr.Bytes())
			}
			if !regexp.MustCompile(`(?m)^mcpepoch: error: .*` + tc.want).Match(stderr.Bytes()) {
				t.Errorf("stderr does not match %q:\n%s", tc.want, stderr.Bytes())
			}
		})
	}
}
