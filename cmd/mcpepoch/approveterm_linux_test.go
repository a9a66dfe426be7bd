package main

// mcpepoch approve at a terminal (a pseudo-terminal the test holds):
// Ctrl-C and SIGTERM at each of its questions end it, and its exit status
// says whether anything was approved.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// ptyTerminal is a command run with a pseudo-terminal as its controlling
// terminal and standard streams; the test types at the other end.
type ptyTerminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	screen strings.Builder
	done   chan struct{} // closed once cmd exited
	read   chan struct{} // closed once the screen is complete
	code   int
}

// startPTY runs bin with args in a new session whose controlling terminal
// is a fresh pseudo-terminal.
func startPTY(t *testing.T, bin string, args ...string) *ptyTerminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	p := &ptyTerminal{t: t, master: master, done: make(chan struct{}), read: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = testenv.Environ("NO_COLOR=1")
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.read) // EIO once no process holds the terminal open
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default: // not reaped yet: the pid is still this child's
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *ptyTerminal) shown() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen.String()
}

// waitScreen waits until the screen shows want, failing the test when the
// command exits first or after a generous bound.
func (p *ptyTerminal) waitScreen(want string) {
	p.t.Helper()
	deadline := time.After(testenv.CommandTimeout)
	for !strings.Contains(p.shown(), want) {
		select {
		case <-p.done:
			if strings.Contains(p.shown(), want) {
				return
			}
			p.t.Fatalf("exited (%d) before showing %q; screen:\n%s", p.code, want, p.shown())
		case <-deadline:
			p.t.Fatalf("waited for %q; screen:\n%s", want, p.shown())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (p *ptyTerminal) press(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits for the command to exit, and for all it wrote, and returns
// its exit status.
func (p *ptyTerminal) exit() int {
	p.t.Helper()
	for _, c := range []chan struct{}{p.done, p.read} {
		select {
		case <-c:
		case <-time.After(testenv.CommandTimeout):
			p.t.Fatalf("still running; screen:\n%s", p.shown())
		}
	}
	return p.code
}

// approveHost serves, on a host socket of the project at root, a review of
// one tool with a call waiting and, when renewal, a renewal of it; an
// approval is answered with a grant and counted.
func approveHost(t *testing.T, root string, renewal bool) *int32 {
	t.Helper()
	var mu sync.Mutex
	granted := new(int32)
	ep := epoch.New(time.Now())
	var run string
	run = fakeHost(t, root, func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
		switch req.Type {
		case localapi.TypeReview:
			rv := localapi.Review{AgentRun: epoch.RunID(run), Label: "fixture", State: localapi.StateReady, Epoch: ep, PID: 42,
				Tools:   []json.RawMessage{json.RawMessage(`{"name":"add"}`)},
				Pending: []*localapi.Pending{{Tool: "add", Reason: "authorization_required", Epoch: ep, Count: 1, At: time.Now()}}}
			if renewal {
				rv.Renewal = &localapi.Renewal{ID: "sha256:r1", ShortCode: "R1", Epoch: ep, Tools: []string{"add"}, Credentials: []string{}, Expires: grant.ExpiresRunEnds}
			}
			b, _ := json.Marshal(rv)
			return notify.Response{Type: localapi.TypeReview, Payload: b}
		case localapi.TypeApprove:
			mu.Lock()
			*granted++
			mu.Unlock()
			b, _ := json.Marshal(grant.Grant{ID: "g1", AgentRun: epoch.RunID(run), ExecutionEpoch: ep, ToolScope: []string{"add"}, ExpiresWhen: grant.ExpiresRunEnds, Proof: approval.ProofTerminal})
			return notify.Response{Type: localapi.TypeApprove, Payload: b}
		}
		return notify.ErrorResponse(notify.CodeUnknownType, req.Type)
	})
	return granted
}

// TestApproveAtTerminalInterruptAndExit: at each question of approve —
// the renewal's key, the tools line, the [y/N] — Ctrl-C ends the command
// at once with exit 1 and nothing approved, and so does SIGTERM; declining
// every question exits 1; approving exits 0.
func TestApproveAtTerminalInterruptAndExit(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	type step struct{ wait, keys string }
	for _, tc := range []struct {
		name    string
		renewal bool
		steps   []step
		signal  syscall.Signal // sent after the steps, instead of keys
		code    int
		want    string
		granted int32
	}{
		{name: "ctrl-c at the renewal key", renewal: true, steps: []step{{"n or Enter: no", "\x03"}}, code: 1, want: "interrupted before an answer"},
		{name: "ctrl-c at the tools line", steps: []step{{"tools to approve", "\x03"}}, code: 1, want: "interrupted before an answer"},
		{name: "ctrl-c at y/N", steps: []step{{"tools to approve", "\n"}, {"[y/N]", "\x03"}}, code: 1, want: "interrupted before an answer"},
		{name: "sigterm at y/N", steps: []step{{"tools to approve", "\n"}, {"[y/N]", ""}}, signal: syscall.SIGTERM, code: 1, want: "interrupted before an answer"},
		{name: "declined", steps: []step{{"tools to approve", "\n"}, {"[y/N]", "n\n"}}, code: 1, want: "nothing approved"},
		{name: "renewal declined", renewal: true, steps: []step{{"n or Enter: no", "n"}}, code: 1, want: "nothing approved"},
		{name: "approved", steps: []step{{"tools to approve", "\n"}, {"[y/N]", "y\n"}}, code: 0, want: "approved: grant g1", granted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := shortRoot(t)
			granted := approveHost(t, root, tc.renewal)
			term := startPTY(t, bin, "approve", "--dir", root)
			for _, s := range tc.steps {
				term.waitScreen(s.wait)
				term.press(s.keys)
			}
			if tc.signal != 0 {
				term.cmd.Process.Signal(tc.signal)
			}
			if code := term.exit(); code != tc.code || !strings.Contains(term.shown(), tc.want) || *granted != tc.granted {
				t.Errorf("exit %d, %d granted, want %d and %d granted, screen showing %q:\n%s", code, *granted, tc.code, tc.granted, tc.want, term.shown())
			}
		})
	}
}
