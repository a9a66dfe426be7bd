package childproc

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/internal/procstat"
)

// BecomeSubreaper makes the calling process a child subreaper (Linux
// prctl PR_SET_CHILD_SUBREAPER): a process the server started that loses
// its parent, a daemon that forked twice and called setsid say, is
// reparented to the host instead of PID 1. The host reaps such orphans as
// they exit and kills those still running whenever it stops an epoch and
// when it ends (KillOrphans). It is process-wide, so mcpepoch host calls
// it once, before Run; a process that embeds several hosts should not.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	reaper.Lock()
	reaper.on = true
	reaper.Unlock()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		for range ch {
			reapOrphans()
		}
	}()
	return nil
}

// reaper knows the processes the host waits for itself (server leaders,
// guards: os/exec reaps them), so that reapOrphans never takes their exit
// status.
var reaper struct {
	sync.Mutex
	on  bool
	own map[int]bool
}

// StartOwn starts cmd as a child the host reaps itself (through os/exec),
// under the reaper's lock, so that reapOrphans cannot take its exit
// status even when it exits at once. Forget ends that once it is
// reaped.
func StartOwn(cmd *exec.Cmd) error {
	reaper.Lock()
	defer reaper.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if reaper.own == nil {
		reaper.own = map[int]bool{}
	}
	reaper.own[cmd.Process.Pid] = true
	return nil
}

func Forget(pid int) {
	reaper.Lock()
	delete(reaper.own, pid)
	reaper.Unlock()
}

// proc is one line of /proc/<pid>/stat, as far as the reaper needs it.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
	comm            string // the executable's name, as the kernel keeps it
}

// procs reads every process's stat.
func procs() []proc {
	all, _ := procstat.All()
	out := make([]proc, 0, len(all))
	for _, s := range all {
		out = append(out, proc{pid: s.PID, ppid: s.PPID, pgid: s.PGID, zombie: s.Zombie(), comm: s.Comm})
	}
	return out
}

// orphans returns the host's children it did not start itself and that
// are not in its own process group (commands the host runs directly,
// such as a runtime's --version, stay in the host's group), with every
// descendant of theirs.
func orphans(all []proc) []proc {
	self, group := os.Getpid(), syscall.Getpgrp()
	reaper.Lock()
	defer reaper.Unlock()
	in := map[int]bool{}
	var out []proc
	for _, p := range all {
		if p.ppid == self && p.pgid != group && !reaper.own[p.pid] {
			in[p.pid] = true
			out = append(out, p)
		}
	}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if in[p.ppid] && !in[p.pid] {
				in[p.pid] = true
				out = append(out, p)
				grew = true
			}
		}
	}
	return out
}

// reapOrphans reaps the orphans that have exited.
func reapOrphans() {
	self := os.Getpid()
	for _, p := range orphans(procs()) {
		if p.zombie && p.ppid == self {
			var ws syscall.WaitStatus
			syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// KillOrphans sends SIGKILL to every orphan reparented to the host and to
// its Descendants, and reaps them, for up to a second: a process that
// left the server's group is stopped with it. It does nothing unless the
// host is a subreaper.
func KillOrphans() {
	reaper.Lock()
	on := reaper.on
	reaper.Unlock()
	if !on {
		return
	}
	deadline := time.Now().Add(time.Second)
	for {
		live := 0
		for _, p := range orphans(procs()) {
			if !p.zombie {
				live++
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		reapOrphans()
		if live == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Descendants returns every live process under pid (not pid itself), pid
// → its comm; ok is false when /proc cannot be read.
func Descendants(pid int) (map[int]string, bool) {
	all := procs()
	if all == nil {
		return nil, false
	}
	out := map[int]string{}
	in := map[int]bool{pid: true}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if in[p.ppid] && !in[p.pid] && !p.zombie {
				in[p.pid], out[p.pid] = true, p.comm
				grew = true
			}
		}
	}
	return out, true
}
