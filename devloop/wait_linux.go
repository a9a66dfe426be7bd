package devloop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// waitBuild waits for the build cmd started, stopping its group when ctx
// ends (SIGTERM, SIGKILL after grace), and returns cmd.Wait's error. The
// leader is waited for without being reaped (waitid WNOWAIT), so that the
// group id stays the build's while what it left running is killed; only
// then is it reaped.
func waitBuild(ctx context.Context, cmd *exec.Cmd, grace time.Duration) error {
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		signalGroup(pid, false)
		select {
		case <-exited:
		case <-time.After(grace):
			signalGroup(pid, true)
			<-exited
		}
	}
	signalGroup(pid, true) // what the build left running; the zombie leader holds the group id
	deadline := time.Now().Add(grace)
	for groupHasLive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Wait()
}

// groupHasLive reports whether /proc lists a process of group pgid that
// is not a zombie.
func groupHasLive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')') // comm may hold spaces and parens
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:]) // state ppid pgrp …
		if len(f) >= 3 && string(f[0]) != "Z" && string(f[0]) != "X" && string(f[2]) == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
