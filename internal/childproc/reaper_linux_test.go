package childproc

import (
	"maps"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startTree starts a shell in a process group of its own with two
// sleeps under it, one of them under a second shell, and returns it;
// the test kills the group at its end.
func startTree(t testing.TB) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `sh -c "sleep 30; :" & sleep 30 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// descendantsByScan is Descendants from every process on the machine,
// the walk Descendants falls back on.
func descendantsByScan(pid int) map[int]string {
	out := map[int]string{}
	in := map[int]bool{pid: true}
	all := procs()
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if in[p.ppid] && !in[p.pid] && !p.zombie {
				in[p.pid], out[p.pid] = true, p.comm
				grew = true
			}
		}
	}
	return out
}

// Descendants walks the tree from its root through the kernel's lists of
// children and finds what a scan of every process finds: the children
// and the grandchildren.
func TestDescendantsWalkFindsWhatAScanFinds(t *testing.T) {
	if _, ok := childrenOf(os.Getpid()); !ok {
		t.Skip("this kernel keeps no lists of children (CONFIG_PROC_CHILDREN): Descendants scans every process")
	}
	cmd := startTree(t)
	pid := cmd.Process.Pid
	var got, want map[int]string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		want = descendantsByScan(pid)
		if len(want) == 3 { // sh, and a sleep under each shell
			break
		}
	}
	if len(want) != 3 {
		t.Fatalf("the scan found %v under %d, want a shell and two sleeps", want, pid)
	}
	got, ok := Descendants(pid)
	if !ok || !maps.Equal(got, want) {
		t.Errorf("Descendants(%d) = %v, %v; a scan of every process finds %v", pid, got, ok, want)
	}
}

// BenchmarkDescendants measures what finding a server's tree costs: the
// walk from its root, which costs what the tree holds, against the scan
// of every process on the machine it replaced (reapOrphans at every
// SIGCHLD, KillOrphans at every stop).
func BenchmarkDescendants(b *testing.B) {
	pid := startTree(b).Process.Pid
	time.Sleep(100 * time.Millisecond)
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Descendants(pid); !ok {
				b.Fatal("no tree")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			descendantsByScan(pid)
		}
	})
}
