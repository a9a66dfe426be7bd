package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The server runs with the signal dispositions it would have without the
// host: the host handles SIGPIPE itself (a client that goes away must not
// kill it), but an ignored signal is inherited across exec, and a server
// that ignores SIGPIPE behaves differently on a broken pipe.
func TestServerInheritsNoIgnoredSignal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's ignored signals from /proc")
	}
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir := shortRoot(t)
	script := "grep '^SigIgn:' /proc/$$/status > sigign.tmp && mv sigign.tmp sigign\nexec cat\n"
	if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "host", "--", "sh", "server.sh")
	cmd.Dir = dir
	cmd.Env = testenv.Environ()
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	var line string
	for deadline := time.Now().Add(20 * time.Second); line == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never started\n%s", stderr.String())
		}
		if b, err := os.ReadFile(filepath.Join(dir, "sigign")); err == nil {
			line = string(b)
		}
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	const sigpipe = 13
	if mask&(1<<(sigpipe-1)) != 0 {
		t.Errorf("the server was started with SIGPIPE ignored (SigIgn %016x)", mask)
	}
}
