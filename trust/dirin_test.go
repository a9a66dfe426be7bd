package trust

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDirIn: the config directory a host's environment gives it, by
// os.UserConfigDir's rules, or which variable leaves it none.
func TestDirIn(t *testing.T) {
	for _, c := range []struct {
		goos, xdg, home, want, err string
	}{
		{"linux", "/x", "/h", "/x/mcpepoch", ""},
		{"linux", "", "/h", "/h/.config/mcpepoch", ""},
		{"linux", "rel/x", "/h", "", "XDG_CONFIG_HOME is relative"},
		{"linux", "", "", "", "neither $XDG_CONFIG_HOME nor $HOME"},
		{"freebsd", "", "/h", "/h/.config/mcpepoch", ""},
		{"darwin", "/x", "/h", "/h/Library/Application Support/mcpepoch", ""},
		{"darwin", "/x", "", "", "$HOME is not defined"},
	} {
		env := map[string]string{"XDG_CONFIG_HOME": c.xdg, "HOME": c.home}
		got, err := DirIn(c.goos, func(k string) string { return env[k] })
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("DirIn(%s, XDG_CONFIG_HOME=%q HOME=%q) = %q, %v; want %q, error with %q", c.goos, c.xdg, c.home, got, err, c.want, c.err)
		}
	}
	// This process's environment gives what os.UserConfigDir says.
	d, err := os.UserConfigDir()
	got, gerr := DirIn(runtime.GOOS, os.Getenv)
	if (err == nil) != (gerr == nil) || err == nil && got != filepath.Join(d, "mcpepoch") {
		t.Errorf("DirIn here = %q, %v; os.UserConfigDir = %q, %v", got, gerr, d, err)
	}
}
