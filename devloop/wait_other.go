//go:build unix && !linux

package devloop

import (
	"context"
	"os/exec"
	"time"
)

// waitBuild waits for the build cmd started, stopping its group when ctx
// ends (SIGTERM, SIGKILL after grace), and returns cmd.Wait's error.
// Without waitid's WNOWAIT the leader is reaped as it exits, after which
// its group id may be another's: processes a build that ran to its end
// left in the background are left running here.
func waitBuild(ctx context.Context, cmd *exec.Cmd, grace time.Duration) error {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-ctx.Done():
	}
	signalGroup(cmd.Process.Pid, false)
	select {
	case err := <-waited:
		return err
	case <-time.After(grace):
		signalGroup(cmd.Process.Pid, true)
		return <-waited
	}
}
