// Package procstat reads /proc/<pid>/stat on Linux: a process's parent,
// process group, state and executable name (proc(5)).
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is what a process's /proc/<pid>/stat line says, as far as process
// supervision needs it: "pid (comm) state ppid pgrp …".
type Stat struct {
	PID, PPID, PGID int
	State           string // R, S, D, Z, X, …
	Comm            string // the executable's name, as the kernel keeps it (at most 15 bytes)
}

// Zombie reports whether the process has exited and waits to be reaped
// (Z), or is being removed (X).
func (s Stat) Zombie() bool { return s.State == "Z" || s.State == "X" }

// Parse reads the stat line b of process pid. comm may hold spaces and
// parentheses: it runs from the first '(' to the last ')'.
func Parse(pid int, b []byte) (Stat, error) {
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return Stat{PID: pid, PPID: ppid, PGID: pgid, State: f[0], Comm: s[open+1 : end]}, nil
}

// Read reads and parses /proc/<pid>/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(pid, b)
}

// All returns the stat of every process /proc lists whose stat can be
// read (a process that exits meanwhile is left out). The error is for
// /proc itself.
func All() ([]Stat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(pid); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// GroupHasLive reports whether a process of group pgid that is not a
// zombie exists. Orphans are reparented to init or a subreaper, which may
// reap them late or never: waiting for their zombies would stall a stop.
// The error is for /proc itself: the caller decides what not knowing
// means.
func GroupHasLive(pgid int) (bool, error) {
	all, err := All()
	if err != nil {
		return false, err
	}
	for _, s := range all {
		if s.PGID == pgid && !s.Zombie() {
			return true, nil
		}
	}
	return false, nil
}
