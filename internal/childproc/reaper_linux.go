package childproc

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
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

func procOf(s procstat.Stat) proc {
	return proc{pid: s.PID, ppid: s.PPID, pgid: s.PGID, zombie: s.Zombie(), comm: s.Comm}
}

// procs reads every process's stat: the whole machine's process table,
// for when the tree cannot be walked from its root (childrenOf).
func procs() []proc {
	all, _ := procstat.All()
	out := make([]proc, 0, len(all))
	for _, s := range all {
		out = append(out, procOf(s))
	}
	return out
}

// tree returns pid's descendants (not pid), read from the kernel's lists
// of each process's children (/proc/PID/task/TID/children): a walk that
// costs what the tree holds, not what the machine runs. ok is false when
// the kernel keeps no such list (built without CONFIG_PROC_CHILDREN):
// then the caller scans every process instead. A process that exits
// during the walk is left out, as a scan leaves it out.
func tree(pid int) (out []proc, ok bool) {
	kids, ok := childrenOf(pid)
	if !ok {
		return nil, false
	}
	for len(kids) > 0 {
		k := kids[0]
		kids = kids[1:]
		s, err := readStat(k)
		if err != nil {
			continue // exited meanwhile
		}
		out = append(out, procOf(s))
		more, _ := childrenOf(k)
		kids = append(kids, more...)
	}
	return out, true
}

// childrenOf returns the children of process pid: those of each of its
// threads, since a child belongs to the thread that forked it and an
// orphan is reparented to any thread of a subreaper. ok is false when the
// kernel keeps no list of children, or pid is gone.
func childrenOf(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := readDirNames(dir)
	if err != nil {
		return nil, false
	}
	buf := make([]byte, 4096)
	for _, tid := range tids {
		b, err := readProc(dir+"/"+tid+"/children", buf)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				if _, serr := os.Stat(dir + "/" + tid); serr == nil {
					return nil, false // the thread is there, its list is not: no such lists
				}
			}
			continue // the thread ended meanwhile
		}
		buf = b[:cap(b)]
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids, true
}

// readProc reads the whole of a small /proc file into buf (grown as
// needed) with raw system calls: open, reads until one comes back short,
// close. os.ReadFile would add an fstat and a try at the poller per file.
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += k
		if k == 0 || n < len(buf) {
			return buf[:n], nil
		}
	}
}

// readStat is procstat.Read through readProc.
func readStat(pid int) (procstat.Stat, error) {
	var buf [512]byte
	b, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return procstat.Stat{}, err
	}
	return procstat.Parse(pid, b)
}

// readDirNames lists the names in dir.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// orphans returns the host's children it did not start itself and that
// are not in its own process group (commands the host runs directly,
// such as a runtime's --version, stay in the host's group), with every
// descendant of theirs: from the host's own tree, or, where the kernel
// keeps no list of children, from every process on the machine.
func orphans() []proc {
	self := os.Getpid()
	if all, ok := tree(self); ok {
		return orphansIn(all)
	}
	return orphansIn(procs())
}

// orphansIn is orphans among the processes all.
func orphansIn(all []proc) []proc {
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

// reapOrphans reaps the orphans that have exited. Only the host's own
// children can be reaped: it reads the stat of those it did not start
// itself, not of their trees.
func reapOrphans() {
	self := os.Getpid()
	var cand []proc
	if kids, ok := childrenOf(self); ok {
		reaper.Lock()
		kids = slices.DeleteFunc(kids, func(k int) bool { return reaper.own[k] })
		reaper.Unlock()
		for _, k := range kids {
			if s, err := readStat(k); err == nil {
				cand = append(cand, procOf(s))
			}
		}
	} else {
		cand = procs()
	}
	for _, p := range orphansIn(cand) {
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
		live, found := 0, 0
		for _, p := range orphans() {
			found++
			if !p.zombie {
				live++
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		if found > 0 {
			reapOrphans()
		}
		if live == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Descendants returns every live process under pid (not pid itself), pid
// → its comm; ok is false when /proc cannot be read.
func Descendants(pid int) (map[int]string, bool) {
	all, ok := tree(pid)
	if !ok {
		if all = procs(); all == nil {
			return nil, false
		}
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
