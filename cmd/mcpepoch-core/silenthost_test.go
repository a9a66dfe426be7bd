package main

import (
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
	root := shortRoot(t)
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
	sock := ulid.Make().String() + notify.SocketSuffix
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
		}
	}()
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
