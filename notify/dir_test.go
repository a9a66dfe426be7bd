package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// shortTemp returns a fresh directory directly under /tmp, mode 0700.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// longRoot returns an existing project root longer than 150 bytes.
func longRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(newRoot(t), strings.Repeat("d", 80), strings.Repeat("e", 80))
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(root) <= 150 {
		t.Fatalf("root %d bytes", len(root))
	}
	return root
}

func hash16(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:])[:16]
}

func tmpDirFor(root string) string {
	return fmt.Sprintf("/tmp/mcpepoch-%d/%s", os.Geteuid(), hash16(root))
}

func TestDir(t *testing.T) {
	xdg := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	// The $HOME candidate has tests of its own.
	t.Setenv("HOME", "")
	fit := "/" + strings.Repeat("r", 55) // 56 bytes: the longest root whose default dir fits
	over := fit + "s"
	long := "/" + strings.Repeat("p", 200)
	for _, tc := range []struct{ root, want, err string }{
		{root: "/src/app", want: "/src/app/.mcpepoch/sock"},
		{root: "/", want: "/.mcpepoch/sock"},
		{root: fit, want: fit + "/.mcpepoch/sock"},
		{root: over, want: xdg + "/mcpepoch/" + hash16(over)},
		{root: long, want: xdg + "/mcpepoch/" + hash16(long)},
		{root: "src/app", err: `project root "src/app" is not an absolute clean path`},
		{root: "/src/../app", err: "not an absolute clean path"},
		{root: "/src/app/", err: "not an absolute clean path"},
		{root: "", err: "not an absolute clean path"},
	} {
		got, err := Dir(tc.root)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Dir(%q) = %q, %v; want error %q", tc.root, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Dir(%q) = %q, %v; want %q", tc.root, got, err, tc.want)
		}
		if p := filepath.Join(got, ulid.Make().String()+SocketSuffix); len(p) > MaxSocketPath {
			t.Errorf("Dir(%q): socket path %d bytes", tc.root, len(p))
		}
	}

	// XDG_RUNTIME_DIR that cannot be used falls back to /tmp.
	notMine := filepath.Join(shortTemp(t), "d")
	os.Mkdir(notMine, 0o700)
	if os.Geteuid() == 0 {
		os.Chown(notMine, 65534, 65534)
	} else {
		notMine = "/" // owned by root, not by us
	}
	tooLong := filepath.Join(xdg, strings.Repeat("l", 60))
	os.Mkdir(tooLong, 0o700)
	for _, x := range []string{"", "relative/dir", filepath.Join(xdg, "missing"), tooLong, notMine} {
		t.Setenv("XDG_RUNTIME_DIR", x)
		if got, err := Dir(long); err != nil || got != tmpDirFor(long) {
			t.Errorf("XDG_RUNTIME_DIR=%q: Dir = %q, %v; want %q", x, got, err, tmpDirFor(long))
		}
	}
}

func TestLongProjectRoot(t *testing.T) {
	for _, tc := range []struct {
		name             string
		hostXDG, hookXDG bool
		wantDirUnderXDG  bool
	}{
		{name: "xdg", hostXDG: true, hookXDG: true, wantDirUnderXDG: true},
		{name: "tmp", hostXDG: false, hookXDG: false},
		{name: "host_tmp_hook_xdg", hostXDG: false, hookXDG: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", "") // the $HOME candidate has tests of its own
			root := longRoot(t)
			xdg := shortTemp(t)
			t.Cleanup(func() {
				os.RemoveAll(tmpDirFor(root))
				os.Remove(filepath.Dir(tmpDirFor(root))) // only if no other project uses it
			})
			setXDG := func(on bool) {
				if on {
					t.Setenv("XDG_RUNTIME_DIR", xdg)
				} else {
					t.Setenv("XDG_RUNTIME_DIR", "")
				}
			}

			setXDG(tc.hostXDG)
			l := serve(t, root, statusHandler)
			if len(l.Path()) > MaxSocketPath {
				t.Errorf("socket path %q is %d bytes", l.Path(), len(l.Path()))
			}
			wantDir := tmpDirFor(root)
			if tc.wantDirUnderXDG {
				wantDir = filepath.Join(xdg, "mcpepoch", hash16(root))
			}
			if filepath.Dir(l.Path()) != wantDir {
				t.Errorf("socket %q, want it in %q", l.Path(), wantDir)
			}
			for _, d := range []string{wantDir, filepath.Dir(wantDir)} {
				if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v, %v; want mode 0700", d, fi.Mode(), err)
				}
			}

			setXDG(tc.hookXDG)
			results := Broadcast(timeout(t), root, Request{Type: "status"})
			if len(results) != 1 || results[0].Err != nil || results[0].Response.Run != l.Name() {
				t.Errorf("Broadcast = %+v, want the host %s", results, l.Name())
			}
		})
	}
}

func TestModes(t *testing.T) {
	root := newRoot(t)
	dir := filepath.Join(root, ".mcpepoch", "sock")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	l := serve(t, root, statusHandler)
	if fi, err := os.Lstat(l.Path()); err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, %v; want socket 0600", fi.Mode(), err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("existing 0755 socket directory is %v, %v; want it tightened to 0700", fi.Mode(), err)
	}

	// Clients refuse a socket directory that others may enter.
	os.Chmod(dir, 0o750)
	if _, err := Hosts(root); err == nil || !strings.Contains(err.Error(), "group or world accessible") || !strings.Contains(err.Error(), dir) {
		t.Errorf("Hosts with a 0750 directory: %v", err)
	}
	results := Broadcast(timeout(t), root, Request{Type: "status"})
	if len(results) != 1 || results[0].Socket != "" || results[0].Err == nil {
		t.Errorf("Broadcast with a 0750 directory = %+v, want one error result", results)
	}
	os.Chmod(dir, 0o700)
}

func TestRefusesForeignDirectory(t *testing.T) {
	// A symlink planted where the socket directory goes is refused.
	root := newRoot(t)
	os.Mkdir(filepath.Join(root, ".mcpepoch"), 0o755)
	target := shortTemp(t)
	dir := filepath.Join(root, ".mcpepoch", "sock")
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(root, ulid.Make().String()); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Listen through a symlinked directory: %v", err)
	}
	if _, err := Hosts(root); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Hosts through a symlinked directory: %v", err)
	}

	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	root = newRoot(t)
	dir = filepath.Join(root, ".mcpepoch", "sock")
	os.MkdirAll(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("socket directory %s: owned by uid 65534, not by uid 0", dir)
	if _, err := Listen(root, ulid.Make().String()); err == nil || err.Error() != want {
		t.Errorf("Listen in a foreign directory: %v; want %q", err, want)
	}
	if _, err := Hosts(root); err == nil || err.Error() != want {
		t.Errorf("Hosts in a foreign directory: %v; want %q", err, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Listen created %v in a foreign directory", ents)
	}
}

func TestListenRejectsBadNames(t *testing.T) {
	root := newRoot(t)
	id := ulid.Make().String()
	for _, name := range []string{"", "host", strings.ToLower(id), id + "x", "../" + id[3:], "8" + id[1:]} {
		if _, err := Listen(root, name); err == nil || !strings.Contains(err.Error(), "not a canonical ULID") {
			t.Errorf("Listen(%q): %v", name, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, ".mcpepoch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Listen with a bad name created the socket directory: %v", err)
	}
	if _, err := Listen(filepath.Join(root, "missing"), id); err == nil {
		t.Errorf("Listen with a missing project root succeeded")
	}
}

func TestListenFirstMakesStateDirPrivate(t *testing.T) {
	// A host whose socket is the first thing made in the project makes
	// <root>/.mcpepoch 0700, as every other command does (package layout).
	root := newRoot(t)
	serve(t, root, statusHandler)
	if fi, err := os.Lstat(filepath.Join(root, ".mcpepoch")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf(".mcpepoch made by Listen is %v, %v; want 0700", fi.Mode(), err)
	}
}
