package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// Ctrl-C or SIGTERM at init's "write N files? [y/N]" (a pseudo-terminal
// the test holds) ends init at once with exit 1, and nothing is written;
// a y writes the files.
func TestInitAtTerminalInterrupt(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	for _, tc := range []struct {
		name   string
		keys   string
		signal syscall.Signal
		code   int
		want   string
	}{
		{name: "ctrl-c", keys: "\x03", code: 1, want: "interrupted before an answer at the terminal: nothing written"},
		{name: "sigterm", signal: syscall.SIGTERM, code: 1, want: "interrupted before an answer at the terminal: nothing written"},
		{name: "yes", keys: "y\n", code: 0, want: "wrote mcpepoch.toml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "package.json"), `{"name": "notes", "version": "1.0.0", "main": "server.js"}`)
			writeFile(t, filepath.Join(dir, "server.js"), "process.stdin.pipe(process.stdout)\n")
			term := startPTY(t, bin, "init", "--dir", dir, "--client", "claude-code", "--build-tool", "make")
			term.waitScreen("[y/N]")
			if tc.keys != "" {
				term.press(tc.keys)
			}
			if tc.signal != 0 {
				term.cmd.Process.Signal(tc.signal)
			}
			code := term.exit()
			_, statErr := os.Stat(filepath.Join(dir, "mcpepoch.toml"))
			if code != tc.code || !strings.Contains(term.shown(), tc.want) || (statErr == nil) != (tc.code == 0) {
				t.Errorf("exit %d, mcpepoch.toml: %v; want exit %d and %q on screen:\n%s", code, statErr, tc.code, tc.want, term.shown())
			}
		})
	}
}
