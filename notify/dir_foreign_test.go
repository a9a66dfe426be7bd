package notify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// The socket directory's choice when another user took /tmp's first
// (dirEnv with a stand-in /tmp). notify's tests check the rest with hosts
// listening.

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
	// A host's socket, listening.
	sock := filepath.Join(dir, ulid.Make().String()+SocketSuffix)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	paths, err := e.hosts(root)
	if err != nil || len(paths) != 1 || paths[0] != sock {
		t.Errorf("hosts = %v, %v; want [%s]", paths, err, sock)
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
