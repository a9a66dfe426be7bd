package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// liveMembers scans /proc for members of group pgid that are not zombies.
func liveMembers(pgid int) (gone bool, detail string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false, "kill(-pgid, 0) succeeds and /proc is unreadable: " + err.Error()
	}
	var live []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != pgid {
			continue // gone meanwhile, or another group
		}
		if st.state == "Z" || st.state == "X" {
			continue
		}
		live = append(live, fmt.Sprintf("pid %d (%s) state %s ppid %d", pid, st.comm, st.state, st.ppid))
	}
	if len(live) == 0 {
		return true, ""
	}
	return false, strings.Join(live, "; ")
}

type procStat struct {
	comm  string
	state string
	ppid  int
	pgrp  int
}

// readStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp …", where
// comm may itself hold spaces and parentheses.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, string(b))
}

func parseStat(pid int, s string) (procStat, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return procStat{comm: s[open+1 : end], state: f[0], ppid: ppid, pgrp: pgrp}, nil
}
