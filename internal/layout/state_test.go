package layout

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestProjectState: the state directory follows an absolute
// XDG_STATE_HOME, falls back to the platform's default under HOME, is
// refused inside the project, and is no directory at all when neither
// variable names an absolute path.
func TestProjectState(t *testing.T) {
	root := t.TempDir()
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	got, err := ProjectState(root)
	if err != nil || got != filepath.Join(state, "mcpepoch", ProjectID(root)) {
		t.Fatalf("absolute XDG_STATE_HOME: %q %v", got, err)
	}
	if ProjectID(root) != ProjectID(filepath.Join(root, "sub", "..")) || len(ProjectID(root)) != 64 {
		t.Fatalf("project id %q", ProjectID(root))
	}

	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "relative/state")
	want := filepath.Join(home, ".local", "state", "mcpepoch")
	if runtime.GOOS == "darwin" {
		want = filepath.Join(home, "Library", "Application Support", "mcpepoch", "state")
	}
	if got, err := ProjectState(root); err != nil || got != filepath.Join(want, ProjectID(root)) {
		t.Fatalf("relative XDG_STATE_HOME: %q %v, want under %s", got, err, want)
	}

	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "inside"))
	if _, err := ProjectState(root); err == nil || !strings.Contains(err.Error(), "inside the project") {
		t.Fatalf("state directory inside the project: %v", err)
	}

	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := ProjectState(root); err == nil || !strings.Contains(err.Error(), "XDG_STATE_HOME") {
		t.Fatalf("no home: %v", err)
	}
}
