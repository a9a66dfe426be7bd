//go:build unix && !linux

package childproc

import "syscall"

// ProcAttr puts the server in its own process group. There is no Pdeathsig
// outside Linux: if the host is killed, the server sees its stdin close and
// is expected to exit, as the MCP stdio transport requires.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
