package host

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// procParent returns the parent of pid and whether pid has a controlling
// terminal, from sysctl kern.proc.pid (kinfo_proc's e_ppid and e_tdev,
// NODEV without a terminal); when sysctl fails, from ps(1).
func procParent(pid int) (ppid int, tty bool, err error) {
	if k, err := unix.SysctlKinfoProc("kern.proc.pid", pid); err == nil && k.Proc.P_pid == int32(pid) {
		return int(k.Eproc.Ppid), k.Eproc.Tdev != -1, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/ps", "-o", "ppid=,tty=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0, false, fmt.Errorf("process %d: sysctl and ps: %v", pid, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, false, fmt.Errorf("process %d: ps printed %q", pid, out)
	}
	ppid, err = strconv.Atoi(f[0])
	if err != nil {
		return 0, false, fmt.Errorf("process %d: ps ppid %q", pid, f[0])
	}
	return ppid, f[1] != "??" && f[1] != "-", nil
}
