package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
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

// foreignTmp returns a directory standing in for /tmp in which another
// user (uid 65534) created mcpepoch-<our uid> first. It needs root.
func foreignTmp(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a directory owned by another user needs root")
	}
	tmp := shortTemp(t)
	os.Chmod(tmp, 0o1777)
	taken := filepath.Join(tmp, fmt.Sprintf("mcpepoch-%d", os.Geteuid()))
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(taken, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestForeignTmpFallsBackToHome: another user created /tmp/mcpepoch-<uid>;
// the host uses $HOME/.cache/mcpepoch instead, and the hook finds it there.
func TestForeignTmpFallsBackToHome(t *testing.T) {
	tmp := foreignTmp(t)
	home := shortTemp(t)
	e := dirEnv{euid: os.Geteuid(), home: home, tmp: tmp}
	root := longRoot(t)

	dir, err := e.makeDir(root)
	want := filepath.Join(home, ".cache", "mcpepoch", hash16(root))
	if err != nil || dir != want {
		t.Fatalf("makeDir = %q, %v; want %q", dir, err, want)
	}
	name := ulid.Make().String()
	l, err := listenPath(filepath.Join(dir, name+SocketSuffix), name)
	if err != nil {
		t.Fatal(err)
	}
	serveListener(t, l, statusHandler)
	paths, err := e.hosts(root)
	if err != nil || len(paths) != 1 || paths[0] != l.Path() {
		t.Errorf("hosts = %v, %v; want [%s]", paths, err, l.Path())
	}
	if ents, _ := os.ReadDir(filepath.Join(tmp, fmt.Sprintf("mcpepoch-%d", os.Geteuid()))); len(ents) != 0 {
		t.Errorf("something was created in the foreign directory: %v", ents)
	}
}

// TestForeignTmpWithoutHome: with nowhere else to go, the host refuses the
// foreign directory, and both it and the hook say who owns it and what to do.
func TestForeignTmpWithoutHome(t *testing.T) {
	tmp := foreignTmp(t)
	e := dirEnv{euid: os.Geteuid(), tmp: tmp}
	root := longRoot(t)
	taken := filepath.Join(tmp, fmt.Sprintf("mcpepoch-%d", os.Geteuid()))

	_, err := e.makeDir(root)
	for _, want := range []string{"socket directory " + taken + ": owned by uid 65534", "another user created it", "XDG_RUNTIME_DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("makeDir: %v; want it to say %q", err, want)
		}
	}
	_, err = e.hosts(root)
	for _, want := range []string{"socket directory " + taken + ": owned by uid 65534", "another user created it", "XDG_RUNTIME_DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("hosts: %v; want it to say %q", err, want)
		}
	}
}
