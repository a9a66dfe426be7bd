package approval

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// TestIsHostProcess: a host is recognised by its command (host or dev)
// run by this executable, or by a binary named mcpepoch (another
// install's).
func TestIsHostProcess(t *testing.T) {
	t.Parallel()
	me := "/opt/a/mcpepoch"
	for _, c := range []struct {
		exe  string
		argv []string
		want bool
	}{
		{"/opt/a/mcpepoch", []string{"/opt/a/mcpepoch", "host"}, true},
		{"/opt/a/mcpepoch", []string{"/bin/renamed", "host"}, true},
		{"/opt/b/mcpepoch", []string{"/opt/b/mcpepoch", "dev"}, true},
		{"/opt/b/mcpepoch", []string{"mcpepoch", "host", "--", "node"}, true},
		{"/opt/b/mcpepoch", []string{"mcpepoch", "status"}, false},
		{"/usr/bin/node", []string{"node", "host"}, false},
		{"/opt/a/mcpepoch", []string{"x"}, false},
	} {
		if got := isHostProcess(c.exe, c.argv, me); got != c.want {
			t.Errorf("isHostProcess(%q, %q) = %v, want %v", c.exe, c.argv, got, c.want)
		}
	}
}

// TestBelowLaunchSide: a process below a host's launching side stands
// apart from it neither as an approver nor as a client; one of that side
// stands apart only as a client (one that runs several hosts).
func TestBelowLaunchSide(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	self, parent := os.Getpid(), os.Getppid()
	side := launchSide{host: 1 << 30, session: []int{parent}}
	if err := side.below(self, true); err == nil || !strings.Contains(err.Error(), "within its session") {
		t.Errorf("a client below the side's session ancestor: %v, want refused", err)
	}
	if err := side.below(parent, true); err != nil {
		t.Errorf("a client that is the side's session ancestor: %v, want apart", err)
	}
	if err := side.below(parent, false); err == nil {
		t.Error("an approver that is the side's session ancestor: apart, want refused")
	}
	side = launchSide{host: 1 << 30, chain: []ancestor{{pid: parent}}}
	if err := side.below(self, true); err == nil {
		t.Error("a client below the side's client: apart, want refused")
	}
}

// TestForkOf: a process between fork and exec (here a subshell, which
// never execs) runs its parent's executable with its parent's arguments:
// a host's or mcpepoch dev's such copy is no host of its own. A child
// that executed something else is not such a copy.
func TestForkOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	sh := exec.Command("sh", "-c", "(sleep 30; :); :")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sh.Process.Kill(); sh.Wait() }()
	var sub, sleep int
	for deadline := time.Now().Add(10 * time.Second); (sub == 0 || sleep == 0) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pids, err := proctree.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if ppid, _, err := proctree.Parent(pid); err == nil && ppid == sh.Process.Pid {
				sub = pid
			}
		}
		for _, pid := range pids {
			if ppid, _, err := proctree.Parent(pid); err == nil && sub != 0 && ppid == sub {
				sleep = pid
			}
		}
	}
	if sub == 0 || sleep == 0 {
		t.Fatalf("the subshell (%d) or its sleep (%d) not found", sub, sleep)
	}
	exe, argv, err := proctree.Args(sub)
	if err != nil {
		t.Fatal(err)
	}
	if !forkOf(sh.Process.Pid, exe, argv) {
		t.Errorf("the subshell %q %q is not taken for a copy of its parent", exe, argv)
	}
	exe, argv, err = proctree.Args(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if forkOf(sub, exe, argv) {
		t.Errorf("sleep %q %q is taken for a copy of the subshell", exe, argv)
	}
}
