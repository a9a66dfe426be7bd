//go:build !linux

package childproc

import (
	"errors"
	"os/exec"
)

// BecomeSubreaper is Linux only (prctl PR_SET_CHILD_SUBREAPER). Elsewhere
// a process that left the server's process group (setsid) is reparented
// to PID 1 when its parent exits, and the host cannot find it again: it
// survives the host. The guard (guard.go) still kills the group itself.
func BecomeSubreaper() error {
	return errors.New("no child subreaper on this system: processes that leave the server's process group outlive the host")
}

func StartOwn(cmd *exec.Cmd) error { return cmd.Start() }
func Forget(int)                   {}
func KillOrphans()                 {}

// Descendants has no process tree to read outside Linux.
func Descendants(int) (map[int]string, bool) { return nil, false }
