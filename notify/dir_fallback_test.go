package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeCandidate: for a long project root, $HOME/.cache/mcpepoch comes
// before /tmp, which another user can occupy first; hook and host find
// each other there.
func TestHomeCandidate(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	home := shortTemp(t)
	t.Setenv("HOME", home)
	root := longRoot(t)
	t.Cleanup(func() {
		os.RemoveAll(tmpDirFor(root))
		os.Remove(filepath.Dir(tmpDirFor(root)))
	})
	want := filepath.Join(home, ".cache", "mcpepoch", hash16(root))
	if got, err := Dir(root); err != nil || got != want {
		t.Fatalf("Dir = %q, %v; want %q", got, err, want)
	}

	l := serve(t, root, statusHandler)
	if filepath.Dir(l.Path()) != want {
		t.Errorf("socket %q, want it in %q", l.Path(), want)
	}
	for _, d := range []string{want, filepath.Dir(want), filepath.Join(home, ".cache")} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want mode 0700", d, fi.Mode(), err)
		}
	}
	results := Broadcast(timeout(t), root, Request{Type: "status"})
	if len(results) != 1 || results[0].Err != nil || results[0].Response.Run != l.Name() {
		t.Errorf("Broadcast = %+v, want the host %s", results, l.Name())
	}

	// A hook that also sees XDG_RUNTIME_DIR still finds the host.
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	if paths, err := Hosts(root); err != nil || len(paths) != 1 || paths[0] != l.Path() {
		t.Errorf("Hosts with XDG_RUNTIME_DIR = %v, %v; want [%s]", paths, err, l.Path())
	}
}

// TestHomeNotUsable: a $HOME that others may write, that is missing or
// relative, or that makes the path too long is not a candidate.
func TestHomeNotUsable(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	root := longRoot(t)
	open := shortTemp(t)
	os.Chmod(open, 0o777)
	long := filepath.Join(shortTemp(t), strings.Repeat("h", 60))
	os.Mkdir(long, 0o700)
	for _, h := range []string{"", "relative", filepath.Join(open, "missing"), open, long} {
		t.Setenv("HOME", h)
		if got, err := Dir(root); err != nil || got != tmpDirFor(root) {
			t.Errorf("HOME=%q: Dir = %q, %v; want %q", h, got, err, tmpDirFor(root))
		}
	}
}
