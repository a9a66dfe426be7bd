package testenv

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// GroupGone reports whether process group pgid has no process left that
// could still run: kill(-pgid, 0) fails with ESRCH, or (on Linux, from
// /proc/<pid>/stat) every member left is a zombie, which its new parent has
// yet to reap. detail describes what is left when the group is not gone.
func GroupGone(pgid int) (gone bool, detail string) {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true, ""
	}
	return liveMembers(pgid)
}

// KillOnCleanup sends SIGKILL to process pid when the test ends, if it is
// still the process that had that pid when KillOnCleanup was called: its
// start time (ps -o lstart=) must be unchanged. Pids are reused quickly on
// a busy machine, and the process is usually gone by then (stopping it is
// often what the test checks), so killing whatever has the pid at the end
// could kill another test's process.
func KillOnCleanup(t testing.TB, pid int) {
	start := startTime(pid)
	t.Cleanup(func() {
		if start != "" && startTime(pid) == start {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// startTime returns when process pid started, as ps prints it, or "" when
// there is no such process.
func startTime(pid int) string {
	out, err := exec.Command("ps", "-o", "lstart=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// KillGroupOnCleanup sends SIGKILL to process group pgid when the test
// ends, unless forget was called or the group may no longer be the one
// the test meant: the group's leader (pid pgid) is then a process with
// another start time than when KillGroupOnCleanup was called. A group
// whose leader has exited but whose members remain is still killed.
func KillGroupOnCleanup(t testing.TB, pgid int) (forget func()) {
	leader := startTime(pgid)
	var done atomic.Bool
	t.Cleanup(func() {
		if done.Load() {
			return
		}
		if now := startTime(pgid); now != "" && now != leader {
			return // pid pgid is another process now: its group is not ours
		}
		syscall.Kill(-pgid, syscall.SIGKILL)
	})
	return func() { done.Store(true) }
}
