package childproc

import "syscall"

// ProcAttr puts the server in its own process group and has the kernel kill
// it if the host dies (Pdeathsig), so a crashed host leaves no server behind.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
