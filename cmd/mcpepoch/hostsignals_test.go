package main

// However the host ends, nothing of its server keeps running: SIGHUP (the
// terminal closed) is handled like SIGTERM, and a host killed with SIGKILL
// still takes its server's whole process group with it (its guard).

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

func TestHostSignalStopsServerGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		sig      syscall.Signal
		wantCode int // host exit status (1: "signal received"); -1: killed by the signal
	}{
		{"SIGHUP", syscall.SIGHUP, 1},
		{"SIGTERM", syscall.SIGTERM, 1},
		{"SIGKILL", syscall.SIGKILL, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			// The shell's background sleep is a grandchild of the host:
			// Pdeathsig would reach only the shell's exec'd node.
			h := startRawHost(t, p, "sh", "-c", "sleep 300 & exec node dist/server.js")
			h.handshake()
			pgid := p.onlyHost().Execution.ProcessID
			seenGone := killGroupOnCleanup(t, pgid)
			if gone, detail := testenv.GroupGone(pgid); gone || (runtime.GOOS == "linux" && !strings.Contains(detail, "(sleep)")) {
				t.Fatalf("server group %d: gone %v, members %s; want node and sleep", pgid, gone, detail)
			}
			h.cmd.Process.Signal(tc.sig)
			select {
			case <-h.done:
			case <-time.After(stopBound):
				t.Fatalf("host still running %s after %s", stopBound, tc.name)
			}
			if code := h.cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("host exit status %d (%s) after %s, want %d", code, h.cmd.ProcessState, tc.name, tc.wantCode)
			}
			waitGroupGone(t, pgid, tc.name)
			seenGone()
		})
	}
}

// TestHostStopsProcessThatLeftTheGroup: on Linux the host is a child
// subreaper, so a daemon the server started with a double fork and setsid,
// out of the group's reach, is reparented to the host and stopped with it.
func TestHostStopsProcessThatLeftTheGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("child subreapers are Linux only; elsewhere such a process outlives the host (README)")
	}
	t.Parallel()
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
	testenv.Need(t, "ps", testenv.InstallProcps) // killPIDFile
	p := newProject(t)
	h := startRawHost(t, p, "sh", "-c", `(setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' &); exec node dist/server.js`)
	t.Cleanup(func() { killPIDFile(t, p.path("escaped.pid")) })
	h.handshake()
	pid := waitPIDFile(t, p.path("escaped.pid"))
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("escaped process %d is not running", pid)
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(stopBound):
		t.Fatalf("host still running %s after SIGTERM", stopBound)
	}
	deadline := time.Now().Add(stopBound)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d, started with setsid by the server, still runs %s after the host ended", pid, stopBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Gone: by cleanup its pid may be another process's, not to be killed.
	os.Remove(p.path("escaped.pid"))
}

// waitGroupGone fails the test unless process group pgid is gone within
// stopBound.
func waitGroupGone(t *testing.T, pgid int, after string) {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		gone, detail := testenv.GroupGone(pgid)
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server group %d still has processes %s after %s: %s", pgid, stopBound, after, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPIDFile waits for file name to hold a pid.
func waitPIDFile(t *testing.T, name string) int {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		b, err := os.ReadFile(name)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after %s", name, stopBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processGone reports whether pid runs no more (gone, or a zombie).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
