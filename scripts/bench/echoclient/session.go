package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// session is one MCP client connection over stdio to a command (the
// server itself, or a middle process in front of it). Calls may be made
// from many goroutines; answers are matched by id.
type session struct {
	name  string
	cmd   *exec.Cmd
	pid   int
	wmu   sync.Mutex
	in    io.WriteCloser
	next  atomic.Int64
	mu    sync.Mutex
	wait  map[int64]chan []byte
	notes chan string // methods of notifications received
	calls int         // tools/call requests made (one goroutine at a time)
}

// start starts argv in dir, with env added to the environment, and
// initializes an MCP session with it.
func start(name string, argv []string, dir string, env ...string) (*session, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &session{name: name, cmd: cmd, pid: cmd.Process.Pid, in: in,
		wait: map[int64]chan []byte{}, notes: make(chan string, 64)}
	go s.read(out)
	if _, err := s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"echoclient","version":"1"}}`); err != nil {
		return nil, fmt.Errorf("%s: initialize: %v", name, err)
	}
	s.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	if _, err := s.call("tools/list", `{}`); err != nil {
		return nil, fmt.Errorf("%s: tools/list: %v", name, err)
	}
	return s, nil
}

func (s *session) send(line []byte) {
	s.wmu.Lock()
	s.in.Write(line)
	s.wmu.Unlock()
}

// call sends one request and waits for its answer line.
func (s *session) call(method, params string) ([]byte, error) {
	id := s.next.Add(1)
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.wait[id] = ch
	s.mu.Unlock()
	s.send([]byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":` + params + "}\n"))
	select {
	case line := <-ch:
		if bytes.Contains(line[:min(len(line), 200)], []byte(`"error":`)) {
			return line, fmt.Errorf("%.300s", line)
		}
		return line, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no answer to %s within 30 s", method)
	}
}

// read routes answer lines by id (read from the line's first bytes: the
// echo server writes it first, and no middle process here reorders) and
// notifications to s.notes.
func (s *session) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		head := line[:min(len(line), 96)]
		i := bytes.Index(head, []byte(`"id":`))
		if i < 0 || bytes.Contains(head, []byte(`"method"`)) {
			var m struct{ Method string }
			json.Unmarshal(line, &m)
			select {
			case s.notes <- m.Method:
			default:
			}
			continue
		}
		rest := head[i+5:]
		j := bytes.IndexAny(rest, ",}")
		id, _ := strconv.ParseInt(strings.TrimSpace(string(rest[:max(j, 0)])), 10, 64)
		s.mu.Lock()
		ch := s.wait[id]
		delete(s.wait, id)
		s.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

func (s *session) close() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the CPU time the session's process (not its children) has
// used: the sum of its threads' schedstat run times, in nanoseconds.
func (s *session) cpu() time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", s.pid))
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			ns += n
		}
	}
	return time.Duration(ns)
}

// rss returns the process's resident set in MiB (VmRSS).
func (s *session) rss() float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
