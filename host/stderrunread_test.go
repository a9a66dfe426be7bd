package host_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A client that never reads the host's stderr (a pipe it leaves full, as
// the MCP spec allows) and a server that floods its own stderr do not
// stop the host: calls are answered, a build signal restarts the server,
// and the host exits once its stdin closes. When stderr is read again the
// host says how many lines it dropped.
func TestUnreadStderrNeverBlocksHost(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	// Far more than a pipe holds, from a process of the server's group
	// that keeps writing while the server serves.
	const flood = "(yes 'flooding the stderr nobody reads' | head -c 8000000 >&2) &\n"
	p.server(flood, nil)
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpepoch(t), p.hostArgs(nil)...)
	cmd.Dir, cmd.Env, cmd.Stderr = p.dir, testenv.Environ(), errW
	c := &raw{t: t, cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	testenv.KillOnCleanup(t, cmd.Process.Pid)
	go c.read(stdout)

	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")
	// The flood has filled the pipe long before the build is done.
	time.Sleep(time.Second)
	p.server(flood, map[string]string{"FIXTURE_REVISION": "B"})
	p.record() // fails the test if the host does not answer the build signal
	waitFor(t, waitLong, "the rebuilt server to answer", func() bool {
		return c.callWait("version", nil).text() == "revision=B"
	})

	// Read now: the host says what it dropped once it can write again.
	var got testenv.Buffer
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 1<<20)
		for {
			n, err := errR.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	const dropped = "lines of the host's log and the server's stderr: stderr was not read"
	waitFor(t, waitLong, "the host to say it dropped lines", func() bool { return strings.Contains(got.String(), dropped) })

	// Unread again, and flooded by the rebuilt server: the host still
	// exits when its stdin closes.
	errR.SetReadDeadline(time.Now())
	<-stopped
	defer errR.Close()
	time.Sleep(time.Second)
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(waitLong):
		t.Fatalf("mcpepoch host did not exit within %s of its stdin closing", waitLong)
	}
}
