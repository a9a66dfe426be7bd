package attack_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// Where the agent runs.
type confinement int

const (
	// unconfined: a shell of the same user, as an agent with no sandbox
	// runs its commands.
	unconfined confinement = iota
	// confined: bwrap with what the sandboxes of Claude Code and Codex
	// leave an agent: the project and a temp directory of its own
	// writable, the rest of the file system read-only, no network, no
	// capabilities, a session of its own; the process table is shared,
	// as under Codex's Landlock sandbox (see bwrapArgs).
	confined
	// confinedPID: confined, and a PID namespace of its own too
	// (bwrap --unshare-pid), as Claude Code's sandbox adds.
	confinedPID
)

func (c confinement) String() string {
	return [...]string{"unconfined", "confined", "confined with a PID namespace"}[c]
}

// agent runs shell commands as the agent's shell tool does: a child of
// the MCP client (this test process, which launched every host), in the
// project, confined or not.
type agent struct {
	t     *testing.T
	where confinement
	dir   string // the project, its working directory
	tmp   string // its temp directory ($TMPDIR), writable when confined
	env   []string
}

// newAgent returns the agent of the project at dir.
func newAgent(t *testing.T, where confinement, dir string) *agent {
	t.Helper()
	if where != unconfined {
		needBwrap(t)
	}
	tmp := filepath.Join(t.TempDir(), "agent-tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, where: where, dir: dir, tmp: tmp, env: []string{
		"MCPEPOCH_BIN=" + testenv.Mcpepoch(t),
		"AGENT_TOOL=" + self, // run with toolEnv set: see tool_test.go
		toolEnv + "=1",
		"TMPDIR=" + tmp,
		"SHELL=/bin/sh", // script -qc runs its command with $SHELL -c
	}}
}

// needBwrap ends a test that confines its agent where bubblewrap is
// missing or cannot confine (Linux only).
func needBwrap(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("bubblewrap confines processes on Linux only")
	}
	bwrap := testenv.Need(t, "bwrap", "install bubblewrap (apt-get install bubblewrap)")
	bwrapWorks.once.Do(func() {
		dir := t.TempDir()
		out, err := exec.Command(bwrap, append(bwrapArgs(dir, dir, true), "--", "true")...).CombinedOutput()
		if err != nil {
			bwrapWorks.err = fmt.Sprintf("%v: %s", err, bytes.TrimSpace(out))
		}
	})
	if bwrapWorks.err != "" {
		testenv.Missing(t, "bwrap cannot make a sandbox here ("+bwrapWorks.err+"): it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or root")
	}
}

// needTerminalTools ends a test whose agent or person opens a terminal
// (script) in a session of its own (setsid) where they are missing.
func needTerminalTools(t *testing.T) {
	t.Helper()
	testenv.Need(t, "script", testenv.InstallUtilLinux)
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
}

// bwrapWorks is whether bwrap could make the tests' sandbox, tried once.
var bwrapWorks struct {
	once sync.Once
	err  string
}

// bwrapArgs is the confinement of a command run in the project dir with
// the temp directory tmp, as a sandbox that lets an agent write only its
// working directory and a temp directory gives it (Claude Code's sandbox
// runtime and Codex's workspace-write both do):
//
//   - / read-only, then the project and tmp bound read-write over it:
//     the user's config and state directories (the trust store, the
//     policy floors, the copy of the audit head) stay read-only, and so
//     does a socket directory outside the project; connect(2) to a
//     socket needs no write access to its file system, so every host's
//     socket and broker stays reachable, wherever it is;
//   - a /dev and /proc of its own (/dev/pts included: script still
//     opens a pseudo-terminal);
//   - no network (a network namespace of its own: unix sockets on the
//     file system are not network);
//   - no capabilities (bwrap gives root's to the command otherwise, and
//     CAP_SYS_ADMIN would undo the read-only mounts): as root, the test
//     machine's user, the agent cannot read /proc/PID/environ of a
//     process that holds capabilities;
//   - a session of its own, and it dies with the test.
//
// With pid, it also gets a PID namespace of its own (Claude Code's
// sandbox does): every process it starts, a detached one included,
// descends from the namespace's init, a child of bwrap.
func bwrapArgs(dir, tmp string, pid bool) []string {
	args := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--bind", dir, dir,
		"--bind", tmp, tmp,
		"--unshare-net",
		"--new-session",
		"--die-with-parent",
		"--cap-drop", "ALL",
		"--chdir", dir,
	}
	if pid {
		args = append(args, "--unshare-pid")
	}
	return args
}

// run runs the shell script as the agent and returns its output and exit
// status.
func (a *agent) run(script string) (testenv.Output, int) {
	a.t.Helper()
	argv := a.argv(script)
	return testenv.Run(a.t, a.dir, a.env, argv[0], argv[1:]...)
}

// argv is the command line that runs the shell script as the agent.
func (a *agent) argv(script string) []string {
	argv := []string{"sh", "-c", script}
	if a.where != unconfined {
		argv = append(append([]string{"bwrap"}, bwrapArgs(a.dir, a.tmp, a.where == confinedPID)...), append([]string{"--"}, argv...)...)
	}
	return argv
}

// background is an agent's command left running.
type background struct {
	cmd  *exec.Cmd
	out  testenv.Buffer
	done chan struct{}
}

// start starts the shell script as the agent, in the background, in a
// process group of its own; it is ended (SIGTERM, then SIGKILL) in
// t.Cleanup, or by stop.
func (a *agent) start(script string) *background {
	a.t.Helper()
	argv := a.argv(script)
	b := &background{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	b.cmd.Dir = a.dir
	b.cmd.Env = testenv.Environ(a.env...)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	b.cmd.WaitDelay = 5 * time.Second
	if err := b.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	a.t.Cleanup(b.stop)
	return b
}

// waitOutput waits until the command has printed want.
func (b *background) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(b.out.String(), want) {
		select {
		case <-b.done:
			t.Fatalf("the agent's %v exited (%v) before it printed %q:\n%s", b.cmd.Args[len(b.cmd.Args)-1], b.cmd.ProcessState, want, b.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's %v did not print %q within %s:\n%s", b.cmd.Args[len(b.cmd.Args)-1], want, waitLong, b.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the command's process group and waits for it.
func (b *background) stop() {
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-b.done:
		return
	case <-time.After(5 * time.Second):
	}
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.done
}

// detached is the agent's shell script that runs command (a shell
// command line) in a terminal of its own: script in a session setsid
// detaches, answering y, once setsid has exited (until then what it
// forked descends from the agent). The script waits for it (a sandbox
// with a PID namespace ends every process in it with the command),
// prints what the terminal showed and exits with its status.
func detached(command string) string {
	return `setsid -f sh -c 'i=0; until [ -e "$TMPDIR/pty.go" ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done; printf "y\n" | script -qec "` + command + `" /dev/null >"$TMPDIR/pty.out" 2>&1; echo $? >"$TMPDIR/pty.rc.tmp"; mv "$TMPDIR/pty.rc.tmp" "$TMPDIR/pty.rc"'
: >"$TMPDIR/pty.go"
i=0; while [ ! -e "$TMPDIR/pty.rc" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
cat "$TMPDIR/pty.out"; exit "$(cat "$TMPDIR/pty.rc")"`
}

// must runs the script as the agent and fails the test unless it exits 0.
func (a *agent) must(script string) string {
	a.t.Helper()
	out, code := a.run(script)
	if code != 0 {
		a.t.Fatalf("the agent (%s): %s: exit %d\n%s", a.where, script, code, out)
	}
	return out.Combined
}

// wantIn fails the test unless out holds each of want.
func wantIn(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, out)
		}
	}
}
