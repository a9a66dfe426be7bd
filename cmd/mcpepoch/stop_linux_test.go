package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// TestClientCloseStopsServerGroupUnreapedOrphans is the background-process
// case of TestClientCloseStopsServerGroup where nothing reaps orphans
// promptly, as in a container whose PID 1 does not reap. The test process
// stands in for that PID 1: it makes itself a child subreaper, so the
// server's orphaned process is reparented to it, and it never reaps it while
// the host stops. The killed orphan stays a zombie: it runs no code, holds
// no port or file, and must count as gone.
//
// It does not run in parallel: becoming a subreaper is process-wide, and
// the orphans of other tests would be reparented to the test process too.
func TestClientCloseStopsServerGroupUnreapedOrphans(t *testing.T) {
	p := newProject(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	t.Cleanup(func() {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		reapOrphans(t)
	})

	h := startRawHost(t, p, "sh", "-c", "sleep 300 & exec node dist/server.js")
	h.handshake()
	pgid := p.onlyHost().Execution.ProcessID
	seenGone := killGroupOnCleanup(t, pgid)
	if gone, detail := testenv.GroupGone(pgid); gone || !strings.Contains(detail, "(sleep)") {
		t.Fatalf("server group %d: gone %v, members %s; want node and sleep", pgid, gone, detail)
	}

	h.stdin.Close()
	start := time.Now()
	select {
	case <-h.done:
	case <-time.After(stopBound):
		t.Errorf("host still running %s after the client closed its stdin; it waits for a zombie of the server's group to be reaped", stopBound)
		select {
		case <-h.done:
			t.Logf("host exited %s after the client closed", time.Since(start).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatal("host still running 30 s after the client closed its stdin")
		}
	}
	if gone, detail := testenv.GroupGone(pgid); !gone {
		t.Errorf("server group %d still has processes: %s", pgid, detail)
	} else {
		seenGone()
	}
}

// reapOrphans reaps the zombies reparented to the test process, by pid, so
// that no exit status of a child the test started itself is taken.
func reapOrphans(t *testing.T) {
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		text := string(b)
		f := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
		if len(f) < 2 || f[0] != "Z" || f[1] != strconv.Itoa(self) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != nil {
			t.Logf("reap orphan %d: %v", pid, err)
		}
	}
}
