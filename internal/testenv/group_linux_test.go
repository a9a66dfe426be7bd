package testenv

import (
	"strconv"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/procstat"
)

const zombieTest = true

func isZombie(t *testing.T, pid string) bool {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := procstat.Read(n)
	if err != nil {
		t.Fatal(err)
	}
	return st.State == "Z"
}

// waitExec waits until process pid runs a program named comm, failing the
// test after 5 s.
func waitExec(t *testing.T, pid int, comm string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := procstat.Read(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.Comm == comm {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs %s, not %s, after 5 s", pid, st.Comm, comm)
		}
	}
}
