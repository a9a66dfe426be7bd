package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestSilentSocketNamedNotAnswering: a socket in the project's socket
// directory that accepts and never answers (a stopped host, or a same-user
// process that is no host) is named as not answering by record, status,
// restart and approve, each of which goes on without it: record records
// the build and exits 0, the others exit 4 (a host error).
func TestSilentSocketNamedNotAnswering(t *testing.T) {
	t.Parallel()
	root, sock := fakeSocketProject(t, nil)
	want := "[host " + sock + "] not answering: nothing within " + notify.AnswerWait.String() + " of the build signal"
	_, stderr, code := runCLI(t, "record", "--dir", root)
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "build complete") {
		t.Errorf("record: exit %d, stderr %q; want exit 0, the build recorded, and %q", code, stderr, want)
	}
	if _, err := os.Stat(layout.Manifest(root)); err != nil {
		t.Errorf("record wrote no manifest: %v", err)
	}
	for _, cmd := range [][]string{{"status"}, {"restart"}, {"approve", "--yes", "--all"}} {
		_, stderr, code := runCLI(t, append(cmd, "--dir", root)...)
		if code != exitHostError || !strings.Contains(stderr, sock) || !strings.Contains(stderr, "not answering: nothing within "+notify.AnswerWait.String()) {
			t.Errorf("%s: exit %d, stderr %q; want a failure naming %s as not answering", cmd, code, stderr, sock)
		}
	}
}

// fakeSocketProject writes a project and binds a socket in its socket
// directory that accepts connections and hands each to serve (nil: keeps
// it open and sends nothing). It returns the root and the socket's name.
func fakeSocketProject(t *testing.T, serve func(net.Conn)) (root, sock string) {
	t.Helper()
	root = shortRoot(t)
	for name, content := range map[string]string{
		"mcpepoch.toml": "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\n",
		"server.sh":     "exec cat\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := notify.MakeDir(root)
	if err != nil {
		t.Fatal(err)
	}
	sock = ulid.Make().String() + notify.SocketSuffix
	ln, err := net.Listen("unix", filepath.Join(dir, sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if serve != nil {
				go serve(c)
			}
		}
	}()
	return root, sock
}

// TestAckingSocketNamedSilent: a socket that acknowledges every request
// and then never answers holds record for notify.SilenceWait past the
// acknowledgement, not for --timeout: record says plainly that it
// acknowledged and went silent, records the build and exits 0.
func TestAckingSocketNamedSilent(t *testing.T) {
	t.Parallel()
	root, sock := fakeSocketProject(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			c.Write([]byte(`{"v":1,"type":"received"}` + "\n"))
		}
	})
	want := "[host " + sock + "] silent: acknowledged the build signal, then nothing for " + notify.SilenceWait.String() + " and no progress"
	_, stderr, code := runCLI(t, "record", "--dir", root, "--timeout", "120s")
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "build complete") || !strings.Contains(stderr, "running server state unknown") {
		t.Errorf("record: exit %d, stderr %q; want exit 0, the build recorded, and %q", code, stderr, want)
	}
}
