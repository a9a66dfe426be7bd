package childproc

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// guard is a small process that outlives the host to kill the server's
// process group when the host dies without stopping it: kill -9 of the
// host, a panic, the machine's OOM killer. Pdeathsig (Linux) reaches only
// the group's leader, and outside Linux there is none; what the leader
// left in its group (a shell's children, a background job) would run on,
// reparented to PID 1.
//
// The guard is /bin/sh blocked reading a pipe whose only write end the
// host holds (close-on-exec, so no server inherits it). When the host
// process ends, for whatever reason, the kernel closes that end, the read
// returns, and the guard sends SIGKILL to the group. The guard runs in a
// process group of its own and ignores the terminal's signals, so that
// closing the terminal or ^C reaches the host, which stops the server
// itself and then ends the guard (release).
//
// What it cannot reach: a process that left the group (setsid, or
// setpgid to another group) is not killed by the guard. On Linux the host
// is a child subreaper (BecomeSubreaper), so such a process is reparented
// to the host when its parent exits, and the host kills it on its own exit
// paths; but once the host is killed with SIGKILL it is reparented to
// PID 1 and survives. On macOS there is no subreaper, and a process that
// left the group survives the host whatever way it ends.
type Guard struct {
	cmd  *exec.Cmd
	w    *os.File // the write end: closing it, or the host's death, fires the guard
	once sync.Once
}

// guardScript waits for EOF on stdin, then kills the group named by $0.
const guardScript = `trap '' HUP INT TERM QUIT; read _; kill -s KILL -- -"$0" 2>/dev/null`

// StartGuard starts the guard of process group pgid. It returns nil when
// the guard cannot start (no /bin/sh): the host logs that and carries on,
// stopping the group itself on every exit path it controls.
func StartGuard(pgid int) (*Guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript, strconv.Itoa(pgid))
	// No environment: the guard needs none (read and kill are the
	// shell's own), and a process that lives as long as the host must
	// not carry what the host's does (credentials of env sources before
	// the host took them out, package credenv).
	cmd.Env = []string{}
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = StartOwn(cmd)
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &Guard{cmd: cmd, w: w}, nil
}

// release ends the guard without firing it: the host has stopped the
// group itself. It kills the guard first, so that a group id reused later
// can never be signalled, then reaps it.
func (g *Guard) Release() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		g.cmd.Process.Kill()
		g.w.Close()
		g.cmd.Wait()
		Forget(g.cmd.Process.Pid)
	})
}
