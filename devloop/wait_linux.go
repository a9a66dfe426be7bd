package devloop

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/procstat"
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
	live, _ := procstat.GroupHasLive(pgid)
	return live
}
