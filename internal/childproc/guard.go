package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Guard is a small process that outlives the host to kill the servers'
// process groups when the host dies without stopping them: kill -9 of the
// host, a panic, the machine's OOM killer. Pdeathsig (Linux) reaches only
// a group's leader, and outside Linux there is none; what the leader left
// in its group (a shell's children, a background job) would run on,
// reparented to PID 1.
//
// The guard is one /bin/sh per host, started with the first group it
// watches and kept for the next ones, blocked reading a pipe whose only
// write end the host holds (close-on-exec, so no server inherits it). The
// host writes each group it starts (Watch) and each one it stopped itself
// (Unwatch) to the pipe, one line each; when the host process ends, for
// whatever reason, the kernel closes that end, the reads return what was
// written and then end, and the guard sends SIGKILL to every group still
// watched. One process for the host's life, not one per server: a restart
// costs two short writes, not a shell's start. The guard runs in a
// process group of its own and ignores the terminal's signals, so that
// closing the terminal or ^C reaches the host, which stops the servers
// itself and then ends the guard (Stop).
//
// What it cannot reach: a process that left the group (setsid, or
// setpgid to another group) is not killed by the guard. On Linux the host
// is a child subreaper (BecomeSubreaper), so such a process is reparented
// to the host when its parent exits, and the host kills it on its own exit
// paths; but once the host is killed with SIGKILL it is reparented to
// PID 1 and survives. On macOS there is no subreaper, and a process that
// left the group survives the host whatever way it ends.
type Guard struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	w       *os.File // the write end: closing it, or the host's death, fires the guard
	groups  map[int]bool
	stopped bool
}

// guardScript keeps the groups written to it ("PGID" to watch, "-PGID" to
// forget) and, at EOF, kills those it still watches. Pure shell: read,
// case, parameter expansion and kill are the shell's own.
const guardScript = `trap '' HUP INT TERM QUIT
g=' '
while read p; do
	case $p in
	-*) p=${p#-}; case $g in *" $p "*) g="${g%% $p *} ${g#* $p }";; esac;;
	*) g="$g$p ";;
	esac
done
for p in $g; do kill -s KILL -- -"$p" 2>/dev/null; done`

// NewGuard returns a guard with no process yet: the first Watch starts it.
func NewGuard() *Guard { return &Guard{groups: map[int]bool{}} }

// Watch has the guard kill process group pgid if the host dies before it
// calls Unwatch. It starts the guard process when there is none (the first
// group, or the last guard died: then every group watched is handed to the
// new one). An error means no guard watches pgid (no /bin/sh): the host
// logs that and carries on, stopping the group itself on every exit path
// it controls.
func (g *Guard) Watch(pgid int) error {
	if g == nil {
		return fmt.Errorf("no guard")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return fmt.Errorf("the guard was stopped")
	}
	g.groups[pgid] = true
	if g.w != nil {
		if g.sendLocked([]byte(strconv.Itoa(pgid)+"\n")) == nil {
			return nil
		}
		g.endLocked(false) // the guard died, or stopped reading: a new one takes every group
	}
	if err := g.startLocked(); err != nil {
		delete(g.groups, pgid)
		return err
	}
	return nil
}

// Unwatch tells the guard the host stopped group pgid itself: a group id
// reused later can never be signalled by it.
func (g *Guard) Unwatch(pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.groups[pgid] {
		return
	}
	delete(g.groups, pgid)
	if g.w != nil && g.sendLocked([]byte("-"+strconv.Itoa(pgid)+"\n")) != nil {
		g.endLocked(false) // the next Watch starts a new guard
	}
}

// guardWrite bounds a write to the guard's pipe: a guard that stopped
// reading (stopped by a signal, say) until its pipe filled is replaced
// rather than waited for.
const guardWrite = time.Second

// sendLocked writes b to the guard's pipe, waiting at most guardWrite.
func (g *Guard) sendLocked(b []byte) error {
	g.w.SetWriteDeadline(time.Now().Add(guardWrite))
	_, err := g.w.Write(b)
	return err
}

// Stop ends the guard as the host ends: a group still watched (one a stop
// under way has not finished with) is killed by it, as if the host had
// died; then the guard process is reaped, for up to a second. Watch
// starts no guard after it.
func (g *Guard) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	g.endLocked(true)
}

// startLocked starts a guard process and hands it every group watched.
func (g *Guard) startLocked() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript)
	// No environment: the guard needs none, and a process that lives as
	// long as the host must not carry what the host's does (credentials
	// of env sources before the host took them out, package credenv).
	cmd.Env = []string{}
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = StartOwn(cmd)
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	g.cmd, g.w = cmd, w
	var b []byte
	for pgid := range g.groups {
		b = append(strconv.AppendInt(b, int64(pgid), 10), '\n')
	}
	if err := g.sendLocked(b); err != nil {
		g.endLocked(false)
		return err
	}
	return nil
}

// endLocked closes the guard's pipe, which fires it at what it still
// watches, and reaps it: at once when it exits, else it is killed after a
// second (a shell stopped by a debugger, say). With fire false the guard
// is killed first, so that it fires at nothing: it died, or stopped
// reading, and a new one takes the groups it watched.
func (g *Guard) endLocked(fire bool) {
	if g.cmd == nil {
		return
	}
	if !fire {
		g.cmd.Process.Kill()
	}
	g.w.Close()
	done := make(chan struct{})
	go func() {
		g.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		g.cmd.Process.Kill()
		<-done
	}
	Forget(g.cmd.Process.Pid)
	g.cmd, g.w = nil, nil
}
