package testenv

import (
	"errors"
	"syscall"
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
