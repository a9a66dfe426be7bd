package proctree

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Parent returns the parent of pid and whether pid has a controlling
// terminal, from sysctl kern.proc.pid (kinfo_proc's e_ppid and e_tdev,
// NODEV without a terminal); when sysctl fails, from ps(1).
func Parent(pid int) (ppid int, tty bool, err error) {
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

// Args returns the executable of pid and its arguments, from sysctl
// kern.procargs2 (argc as an int32, the executable path, NUL padding,
// then argc NUL-terminated arguments); when sysctl fails, from ps(1),
// whose command line splits on spaces.
func Args(pid int) (exe string, argv []string, err error) {
	if b, err := unix.SysctlRaw("kern.procargs2", pid); err == nil && len(b) > 4 {
		argc := int(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
		rest := b[4:]
		i := bytes.IndexByte(rest, 0)
		if i >= 0 {
			exe, rest = string(rest[:i]), bytes.TrimLeft(rest[i:], "\x00")
			for len(argv) < argc && len(rest) > 0 {
				j := bytes.IndexByte(rest, 0)
				if j < 0 {
					j = len(rest)
				}
				argv, rest = append(argv, string(rest[:j])), rest[min(j+1, len(rest)):]
			}
			if len(argv) > 0 {
				return exe, argv, nil
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", nil, fmt.Errorf("process %d: sysctl and ps: %v", pid, err)
	}
	return "", strings.Fields(string(out)), nil
}
