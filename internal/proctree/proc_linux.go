package proctree

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Parent returns the parent of pid and whether pid has a controlling
// terminal, from /proc/<pid>/stat (proc(5): ppid is the 4th field, tty_nr
// the 7th; the command name in parentheses may hold spaces).
func Parent(pid int) (ppid int, tty bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 5 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want 5 or more", pid, len(f))
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, false, fmt.Errorf("/proc/%d/stat: ppid %q", pid, f[1])
	}
	return ppid, f[4] != "0", nil
}

// Args returns the executable of pid (/proc/<pid>/exe) and its
// arguments (/proc/<pid>/cmdline, NUL-separated). The executable is ""
// when it cannot be read (another user's process); the arguments decide.
func Args(pid int) (exe string, argv []string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", nil, err
	}
	exe, _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return exe, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}
