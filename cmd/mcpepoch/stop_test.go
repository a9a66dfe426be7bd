package main

// When the client closes the host's stdin, the host stops: it and every
// process of the server's process group are gone within 5 s.

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// stopBound is how long the host and the server's process group may take
// to go once the client has closed the host's stdin.
const stopBound = 5 * time.Second

func TestClientCloseStopsServerGroup(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "setsid", testenv.InstallUtilLinux)
	testenv.Need(t, "ps", testenv.InstallProcps) // killPIDFile
	for _, tc := range []struct {
		name    string
		command []string
		members []string // process names in the server's group on Linux
	}{
		{"node", []string{"node", "dist/server.js"}, []string{"node"}},
		// The shell forks node and waits for it: the group leader is sh.
		{"sh -c", []string{"sh", "-c", "node dist/server.js; exit $?"}, []string{"sh", "node"}},
		// The server leaves a process behind in its group when it exits.
		{"sh -c with a background process", []string{"sh", "-c", "sleep 300 & exec node dist/server.js"}, []string{"node", "sleep"}},
		// The server starts a process in a session of its own (as Node's
		// spawn with detached: true does) that keeps the server's stdout
		// and stderr open. It is out of the group's reach and may outlive
		// the host, but it must not keep the host from stopping.
		// Its pid file lies outside the project: a command line the host
		// cannot follow makes the whole project code.
		{"detached process holding stdout", []string{"sh", "-c", "setsid sleep 300 & echo $! > PIDFILE; exec node dist/server.js"}, []string{"node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			pidFile := filepath.Join(t.TempDir(), "detached.pid")
			command := slices.Clone(tc.command)
			command[len(command)-1] = strings.Replace(command[len(command)-1], "PIDFILE", pidFile, 1)
			h := startRawHost(t, p, command...)
			t.Cleanup(func() { killPIDFile(t, pidFile) }) // before the host's cleanup
			h.handshake()
			pgid := p.onlyHost().Execution.ProcessID
			seenGone := killGroupOnCleanup(t, pgid)
			gone, detail := testenv.GroupGone(pgid)
			if gone {
				t.Fatalf("server group %d is gone before the client closed", pgid)
			}
			if runtime.GOOS == "linux" {
				for _, name := range tc.members {
					if !strings.Contains(detail, "("+name+")") {
						t.Fatalf("server group %d lacks a %s process: %s", pgid, name, detail)
					}
				}
			}

			h.stdin.Close()
			start := time.Now()
			select {
			case <-h.done:
			case <-time.After(stopBound):
				t.Fatalf("host still running %s after the client closed its stdin\nhost stderr:\n%s", stopBound, h.stderr.String())
			}
			if code := h.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("host exit status %d, want 0", code)
			}
			for {
				gone, detail := testenv.GroupGone(pgid)
				if gone {
					seenGone()
					break
				}
				if time.Since(start) > stopBound {
					t.Fatalf("server group %d still has processes %s after the client closed: %s", pgid, stopBound, detail)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("host and server group gone %s after the client closed", time.Since(start).Round(time.Millisecond))
		})
	}
}

// killPIDFile kills the process whose pid is in file name, if there is one
// (the test needs ps: testenv.Need before the cleanup is registered)
// and it is still the `sleep` the test started. The process is usually gone
// by then (stopping it is what the tests check), and pids are reused fast
// on a busy machine: killing whatever has that pid now would kill another
// test's process.
func killPIDFile(t *testing.T, name string) {
	b, err := os.ReadFile(name)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	out, err := exec.Command("ps", "-o", "comm=", "-p", strconv.Itoa(pid)).Output()
	if err == nil && strings.TrimSpace(string(out)) == "sleep" {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killGroupOnCleanup kills what is left of process group pgid when the
// test ends, so that a failed stop leaves nothing running. The test calls
// the function it returns once it has seen the group gone: process group
// ids are reused, and by the end of the test pgid may be the group of
// another test's process, which must not be killed.
func killGroupOnCleanup(t *testing.T, pgid int) (seenGone func()) {
	return testenv.KillGroupOnCleanup(t, pgid)
}

// rawHost is `mcpepoch host` driven over its stdin and stdout directly, so
// that the test alone decides when its stdin closes.
type rawHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *testenv.Buffer
	done   chan struct{} // closed once the host has exited
}

func startRawHost(t *testing.T, p *project, command ...string) *rawHost {
	t.Helper()
	cmd := exec.Command(p.bin, append([]string{"host", "--"}, command...)...)
	cmd.Dir = p.dir
	cmd.Env = testenv.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A server process the host failed to stop holds the stderr pipe open:
	// do not wait for it once the host has exited.
	cmd.WaitDelay = 2 * time.Second
	h := &rawHost{t: t, cmd: cmd, lines: make(chan []byte, 16), stderr: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = h.stderr
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			h.lines <- append([]byte(nil), sc.Bytes()...)
		}
		cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		h.stdin.Close()
		select {
		case <-h.done:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-h.done:
			case <-time.After(10 * time.Second):
				t.Errorf("host pid %d not reaped 10 s after SIGKILL", cmd.Process.Pid)
			}
		}
		if t.Failed() {
			t.Logf("host stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

// responseTimeout is how long a test waits for the host to answer a
// request before it fails.
const responseTimeout = 15 * time.Second

// send writes one JSON-RPC message.
func (h *rawHost) send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, msg+"\n"); err != nil {
		h.t.Fatalf("write to host: %v", err)
	}
}

// response waits for the response with the given id, skipping notifications.
func (h *rawHost) response(id int) json.RawMessage {
	h.t.Helper()
	timeout := time.After(responseTimeout)
	for {
		select {
		case line := <-h.lines:
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				h.t.Fatalf("host wrote %q: %v", line, err)
			}
			if m.ID == nil || *m.ID != id {
				continue
			}
			if m.Error != nil {
				h.t.Fatalf("request %d: error %s", id, m.Error)
			}
			return m.Result
		case <-h.done:
			h.t.Fatalf("host exited before answering request %d\n%s", id, h.stderr.String())
		case <-timeout:
			h.t.Fatalf("no answer to request %d within %s\n%s", id, responseTimeout, h.stderr.String())
		}
	}
}

// handshake initializes the session and lists the tools, so the server is
// known to be up and serving.
func (h *rawHost) handshake() {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stop-test","version":"0"}}}`)
	h.response(0)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(h.response(1), &res); err != nil || len(res.Tools) == 0 {
		h.t.Fatalf("tools/list: %v, %d tools", err, len(res.Tools))
	}
}
