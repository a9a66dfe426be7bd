package testenv

import (
	"strconv"
	"testing"
	"time"
)

const zombieTest = true

func isZombie(t *testing.T, pid string) bool {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readStat(n)
	if err != nil {
		t.Fatal(err)
	}
	return st.state == "Z"
}

func TestParseStat(t *testing.T) {
	st, err := parseStat(42, "42 (a) b (c) S 7 42 42 0 -1 4194560 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if st != (procStat{comm: "a) b (c", state: "S", ppid: 7, pgrp: 42}) {
		t.Errorf("parseStat = %+v", st)
	}
	if _, err := parseStat(42, "42 (a) S"); err == nil {
		t.Error("parseStat accepted a short line")
	}
	if st, err := readStat(1); err != nil || st.state == "" {
		t.Errorf("readStat(1) = %+v, %v", st, err)
	}
}

// waitExec waits until process pid runs a program named comm, failing the
// test after 5 s.
func waitExec(t *testing.T, pid int, comm string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := readStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.comm == comm {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs %s, not %s, after 5 s", pid, st.comm, comm)
		}
	}
}
