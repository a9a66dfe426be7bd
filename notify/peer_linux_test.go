package notify

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/oklog/ulid/v2"
)

// nobody is the uid the foreign client runs as.
const nobody = 65534

// foreignExe copies the test binary to a directory every user may read, so
// that a process running as nobody can execute it.
func foreignExe(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a client under another uid needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := worldDir(t)
	exe := filepath.Join(dir, "notify.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

// worldDir returns a fresh directory under /tmp with mode 0755.
func worldDir(t *testing.T) string {
	t.Helper()
	d := shortTemp(t)
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// sendAsNobody runs Send to socket in a process with uid and gid nobody and
// returns what it printed.
func sendAsNobody(t *testing.T, exe, socket string) string {
	t.Helper()
	cmd := helper(t, exe, "send", "NOTIFY_SOCKET="+socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot start a process as uid %d: %v", nobody, err)
		}
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		if _, ok := errors.AsType[*exec.ExitError](err); !ok {
			t.Fatal(err)
		}
		t.Fatalf("client as uid %d: %v: %s", nobody, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

func TestPeerCheckRefusesOtherUID(t *testing.T) {
	exe := foreignExe(t)
	// A socket others can reach, so that only the peer check stands in
	// the way.
	name := ulid.Make().String()
	l, err := listenPath(filepath.Join(worldDir(t), name+SocketSuffix), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	serveListener(t, l, func(ctx context.Context, peer Peer, req Request) Response {
		calls.Add(1)
		return statusHandler(ctx, peer, req)
	})

	got := sendAsNobody(t, exe, l.Path())
	if want := "remote forbidden peer uid 65534 is not the host's uid 0"; got != want {
		t.Errorf("client as nobody got %q, want %q", got, want)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times for a foreign peer", n)
	}
	// The host goes on serving its own user.
	if resp, err := Send(timeout(t), l.Path(), Request{Type: "status"}); err != nil || resp.Type != "status" {
		t.Errorf("own user after refusal: %+v, %v", resp, err)
	}
}

func TestSocketDirectoryKeepsOtherUsersOut(t *testing.T) {
	exe := foreignExe(t)
	root := worldDir(t) // traversable by all, so the 0700 socket directory is what stops nobody
	var calls atomic.Int32
	l := serve(t, root, func(ctx context.Context, peer Peer, req Request) Response {
		calls.Add(1)
		return statusHandler(ctx, peer, req)
	})
	if got := sendAsNobody(t, exe, l.Path()); got != "eacces" {
		t.Errorf("client as nobody got %q, want eacces", got)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times for a foreign peer", n)
	}
}
