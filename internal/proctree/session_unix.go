//go:build unix

package proctree

import "golang.org/x/sys/unix"

// Session returns the session id of pid (getsid(2)): the pid of its
// session leader.
func Session(pid int) (int, error) { return unix.Getsid(pid) }
