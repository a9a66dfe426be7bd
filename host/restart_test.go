package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// A write in flight when the epoch changes gets exactly one server_restarted
// error, promptly, and is never run again by the new epoch.
func TestRestartFailsInflightWriteOnce(t *testing.T) {
	t.Parallel()
	p := drainProject(t, `drain = "0s"`) // no drain: the write is in flight when the old server stops
	c := startRaw(t, p, nil)
	c.initialize()

	const delay = 1500 * time.Millisecond
	id := c.call("slow_write", map[string]any{"key": "k", "delayMs": delay.Milliseconds()})
	waitFor(t, waitLong, "the fixture to start the write", func() bool { return p.read("counter/k.started") != "" })

	r := p.background("restart", "--dir", p.dir)
	resp := c.response(id, waitLong)
	took := r.wait(t)
	wantError(t, resp, host.CodeServerRestarted, "server_restarted:")
	wantNext(t, resp, "list the tools again, check whether it did, then call again", "mcpepoch approve")
	if after := resp.at.Sub(r.start); after > took+time.Second {
		t.Errorf("the error came %s after the restart started, which took %s: want it within the restart + 1s", after, took)
	}
	var data struct {
		Reason        string `json:"reason"`
		Method        string `json:"method"`
		PreviousEpoch string `json:"previousEpoch"`
		CurrentEpoch  string `json:"currentEpoch"`
	}
	if err := json.Unmarshal(resp.Error.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", resp.Error.Data, err)
	}
	if data.Method != "tools/call" || data.PreviousEpoch == "" || data.CurrentEpoch == "" || data.PreviousEpoch == data.CurrentEpoch {
		t.Errorf("error data %s: want method tools/call and two different epochs", resp.Error.Data)
	}

	// Give a surviving or repeated run time to finish its write.
	time.Sleep(delay + 500*time.Millisecond)
	wantText(t, c.callWait("version", nil), "revision=A") // the new epoch serves
	if n := len(c.responses(id)); n != 1 {
		t.Errorf("%d responses to the slow write, want 1", n)
	}
	if started := lines(p.read("counter/k.started")); len(started) != 1 {
		t.Errorf("the write started %d times, want 1: %q", len(started), started)
	}
	if count := strings.TrimSpace(p.read("counter/k.count")); count != "" && count != "1" {
		t.Errorf("counter is %q, want at most 1", count)
	}
}

// waitFor polls cond every 10 ms until it holds, failing the test after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A burst of calls spanning a restart: every call is answered exactly once,
// calls in flight at the old epoch with server_restarted, later ones by the
// new epoch.
func TestRestartBurstAnsweredOnce(t *testing.T) {
	t.Parallel()
	const n, slow = 10, 5 // calls; the first slow ones are in flight at the restart
	setup := func(t *testing.T) *project {
		// No drain: the slow writes are in flight when the old server stops.
		return drainProject(t, `drain = "0s"`)
	}
	// burst sends call(i) for i < n: slow writes, then the restart (a
	// rebuild to revision B), quick writes, and after the restart is done
	// the last one.
	burst := func(t *testing.T, p *project, call func(i int, args map[string]any)) {
		for i := range n {
			args := map[string]any{"key": fmt.Sprintf("b%d", i), "delayMs": 0}
			switch {
			case i < slow:
				args["delayMs"] = 3000
			case i == slow:
				waitFor(t, waitLong, "the slow writes to start", func() bool {
					for j := range slow {
						if p.read(fmt.Sprintf("counter/b%d.started", j)) == "" {
							return false
						}
					}
					return true
				})
				p.server("", map[string]string{"FIXTURE_COUNTER_DIR": p.counter, "FIXTURE_REVISION": "B"})
				rec := p.background("record", "--dir", p.dir)
				defer rec.wait(t)
			case i == n-1:
				// The restart must be over for the last call.
				continue
			}
			call(i, args)
			time.Sleep(30 * time.Millisecond)
		}
	}
	// check checks what call i got: err is nil or a server_restarted code.
	check := func(t *testing.T, i int, text string, code int) {
		t.Helper()
		switch {
		case i < slow && code != host.CodeServerRestarted:
			t.Errorf("call %d (in flight at the restart): got %q code %d, want error %d", i, text, code, host.CodeServerRestarted)
		case i == n-1 && (code != 0 || !strings.Contains(text, "revision=B")):
			t.Errorf("call %d (after the restart): got %q code %d, want revision=B", i, text, code)
		case code != 0 && code != host.CodeServerRestarted:
			t.Errorf("call %d: error code %d, want a result or %d", i, code, host.CodeServerRestarted)
		}
	}

	t.Run("ts-sdk", func(t *testing.T) {
		p := setup(t)
		cl := testenv.Driver(t, p.dir, nil, append([]string{mcpepoch(t)}, p.hostArgs(nil)...)...)
		pending := make([]*testenv.Pending, n)
		burst(t, p, func(i int, args map[string]any) { pending[i] = cl.CallAsync("slow_write", args) })
		pending[n-1] = cl.CallAsync("slow_write", map[string]any{"key": fmt.Sprintf("b%d", n-1)})
		for i, pc := range pending {
			res, err := pc.Wait()
			switch {
			case err != nil && err.Code != nil:
				check(t, i, err.Message, *err.Code)
			case err != nil:
				t.Errorf("call %d: %v", i, err)
			default:
				check(t, i, res.Text(), 0)
			}
		}
		time.Sleep(200 * time.Millisecond) // a second answer would arrive now
		if ev := cl.Events(); len(ev.Errors) != 0 {
			t.Errorf("the client reported errors (a second answer shows up here): %q", ev.Errors)
		}
	})

	t.Run("go-sdk", func(t *testing.T) {
		p := setup(t)
		cs := goClient(t, p, nil, "", nil)
		if v := negotiated(cs); v != statelessVersion {
			t.Errorf("negotiated %q, want %s", v, statelessVersion)
		}
		var wg sync.WaitGroup
		type outcome struct {
			text string
			code int
			err  error
		}
		got := make([]outcome, n)
		do := func(i int, args map[string]any) {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitLong)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_write", Arguments: args})
				var werr *jsonrpc.Error
				switch {
				case errors.As(err, &werr):
					got[i] = outcome{text: werr.Message, code: int(werr.Code)}
				case err != nil:
					got[i] = outcome{err: err}
				default:
					got[i] = outcome{text: res.Content[0].(*mcp.TextContent).Text}
				}
			})
		}
		burst(t, p, do)
		do(n-1, map[string]any{"key": fmt.Sprintf("b%d", n-1)})
		wg.Wait()
		for i, o := range got {
			if o.err != nil {
				t.Errorf("call %d: %v", i, o.err)
				continue
			}
			check(t, i, o.text, o.code)
		}
	})
}

// A call that arrives while the new epoch is starting is held, not
// forwarded, and runs on the new epoch once it is ready, after the
// list_changed that announces it.
func TestCallHeldDuringIdentityPending(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "A"})
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")

	p.server("sleep 1\n", map[string]string{"FIXTURE_REVISION": "B"}) // a slow-starting build
	rec := p.background("record", "--dir", p.dir)
	p.waitState(host.StateIdentityPending, waitLong)
	id := c.call("version", nil)
	resp := c.response(id, waitLong)
	rec.wait(t)
	wantText(t, resp, "revision=B")
	notes := c.notifications("notifications/tools/list_changed")
	if len(notes) != 1 {
		t.Fatalf("%d list_changed notifications, want 1", len(notes))
	}
	if notes[0].seq > resp.seq {
		t.Errorf("the held call was answered before list_changed announced the new epoch")
	}
}

// Five builds signalled within 200 ms leave one server running, on the last
// build.
func TestBuildSignalBurst(t *testing.T) {
	t.Parallel()
	needProc(t)
	p := newProject(t, map[string]string{"FIXTURE_REVISION": "R0"})
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=R0")

	// Slow starts make restarts overlap the later signals.
	var recs []*bg
	for i := 1; i <= 5; i++ {
		p.server("sleep 0.3\n", map[string]string{"FIXTURE_REVISION": "R" + strconv.Itoa(i)})
		recs = append(recs, p.background("record", "--dir", p.dir))
		if i < 5 {
			time.Sleep(40 * time.Millisecond)
		}
	}
	for _, r := range recs {
		r.wait(t)
	}
	st := p.waitState(host.StateReady, waitLong)
	want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(p.read("server.sh"))))
	if st.Execution == nil || string(st.Execution.EntryDigest) != want {
		t.Fatalf("status execution %+v: want entry digest %s (the last server.sh)", st.Execution, want)
	}
	procs := processesOf(t, p.path("bin/fixture"))
	if len(procs) != 1 || procs[0] != st.Execution.ProcessID {
		t.Errorf("fixture processes %v, want only the current one, pid %d", procs, st.Execution.ProcessID)
	}
	wantText(t, c.callWait("version", nil), "revision=R5")
}

// A server that binds a fixed port can be restarted: the old process is
// gone before the new one starts.
func TestRestartFixedPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// The server holds the port until SIGKILL, so a new one started
	// before the old one is gone finds it in use.
	p := newProject(t, map[string]string{"FIXTURE_LISTEN_ADDR": addr, "FIXTURE_IGNORE_TERM": "1"})
	c := startRaw(t, p, []string{"--grace", "300ms"})
	c.initialize()
	last := p.waitState(host.StateReady, waitLong).Execution.Epoch
	for i := range 3 {
		p.restart()
		st := p.waitState(host.StateReady, waitLong)
		if st.Execution.Epoch == last {
			t.Fatalf("restart %d: epoch still %s", i+1, last)
		}
		last = st.Execution.Epoch
		wantText(t, c.callWait("version", nil), "revision=A")
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("restart %d: nothing listens on %s: %v", i+1, addr, err)
		}
		conn.Close()
	}
	if s := c.stderr.String(); strings.Contains(s, "address already in use") || strings.Contains(s, "exited on its own") {
		t.Errorf("a server failed to start:\n%s", s)
	}
}

// Answers a stopped server writes after the restart never reach the client.
func TestLateAnswersDropped(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	copyFile(t, buildServer(t, "host/testdata/lateserver"), p.path("bin/lateserver"))
	c := startRaw(t, p, nil, "./bin/lateserver")
	c.initialize()
	id := c.call("hang", nil)
	waitFor(t, waitLong, "the call to be forwarded", func() bool { return p.status().InFlight == 1 })
	p.restart()
	wantError(t, c.response(id, waitLong), host.CodeServerRestarted, "server_restarted:")
	// The old server answered late, and sent list_changed: the host must
	// have dropped both.
	waitFor(t, waitLong, "the host to drop the late answer", func() bool {
		return strings.Count(c.stderr.String(), "dropped a late message from a stopped server") >= 2
	})
	if names := c.listTools(); len(names) != 1 || names[0] != "hang" {
		t.Errorf("tools after the restart: %q", names)
	}
	if rs := c.responses(id); len(rs) != 1 {
		t.Errorf("%d responses to the call, want 1: %v", len(rs), rs)
	}
	if notes := c.notifications("notifications/tools/list_changed"); len(notes) != 1 {
		t.Errorf("%d list_changed notifications, want 1 (the host's)", len(notes))
	}
}

// A server that ignores stdin EOF and SIGTERM is killed once the grace
// period is over: on restart, and however the host ends, leaving no orphan.
func TestStubbornServerKilled(t *testing.T) {
	t.Parallel()
	needProc(t)
	const grace = 500 * time.Millisecond
	// The host waits 500 ms after closing stdin, then grace after SIGTERM:
	// 1 s here. bound is what a host that ignored --grace and waited its
	// default of 5 s would take at least, so that a loaded machine's
	// slowness is not taken for the wrong grace.
	const bound = 500*time.Millisecond + 5*time.Second
	start := func(t *testing.T) (*project, *raw, int) {
		p := newProject(t, map[string]string{"FIXTURE_IGNORE_TERM": "1", "FIXTURE_PID_FILE": "fixture.pid"})
		c := startRaw(t, p, []string{"--grace", grace.String()})
		c.initialize()
		pid := readPID(t, p.path("fixture.pid"), waitLong)
		killOnCleanup(t, pid)
		return p, c, pid
	}

	t.Run("restart", func(t *testing.T) {
		p, c, pid := start(t)
		os.Remove(p.path("fixture.pid"))
		if took := p.restart(); took > bound {
			t.Errorf("restart took %s, want under %s", took, bound)
		}
		if alive(pid) {
			t.Errorf("old server pid %d still runs after the restart", pid)
		}
		pid2 := readPID(t, p.path("fixture.pid"), waitLong)
		killOnCleanup(t, pid2)
		wantText(t, c.callWait("version", nil), "revision=A")
	})

	// The host ends when its client closes stdin, on SIGTERM, and (by the
	// kernel's parent-death signal) on SIGKILL.
	for _, how := range []string{"stdin", "SIGTERM", "SIGKILL"} {
		t.Run("exit-"+how, func(t *testing.T) {
			_, c, pid := start(t)
			begin := time.Now()
			switch how {
			case "stdin":
				c.stdin.Close()
			case "SIGTERM":
				c.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGKILL":
				c.cmd.Process.Kill()
			}
			select {
			case <-c.done:
			case <-time.After(bound + 5*time.Second):
				t.Fatalf("host still runs %s after %s", time.Since(begin), how)
			}
			if took := time.Since(begin); took > bound {
				t.Errorf("host took %s to exit, want under %s", took, bound)
			}
			if !waitGone(pid, time.Second) {
				t.Errorf("server pid %d outlived the host", pid)
			}
		})
	}
}

// A server that keeps crashing is restarted a bounded number of times with
// back-off; then the host stays down, answers server_unavailable and does
// not spin.
func TestCrashLoopBounded(t *testing.T) {
	t.Parallel()
	needProc(t)
	p := newProject(t, nil)
	p.server("echo $$ >> starts.log\n", map[string]string{"FIXTURE_CRASH_AFTER_MS": "50"})
	c := startRaw(t, p, nil)
	c.roundTrip("initialize", map[string]any{ // the answer may be an error: the server crashes
		"protocolVersion": legacyVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpepoch-host-test", "version": "0.1.0"},
	})
	c.notify("notifications/initialized", nil)

	var st host.Status
	waitFor(t, 30*time.Second, "the host to give up", func() bool {
		st = p.statusGaveUp()
		return st.State == host.StateDown && st.Crashes > 5
	})
	starts := len(lines(p.read("starts.log")))
	if starts > 6 {
		t.Errorf("the server started %d times, want at most 6 (1 + 5 restarts)", starts)
	}

	before, err := readStat(c.pid())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	after, err := readStat(c.pid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc reports CPU time in USER_HZ ticks, 100 per second on Linux.
	if ticks := after.utime + after.stime - before.utime - before.stime; ticks >= 100 {
		t.Errorf("the host used %d ticks of CPU in 5 s while down, want under 1 s", ticks)
	}
	if n := len(lines(p.read("starts.log"))); n != starts {
		t.Errorf("the server started %d more times after the host gave up", n-starts)
	}
	r := c.callWait("version", nil)
	wantError(t, r, host.CodeServerUnavailable, "server_unavailable:")
	wantNext(t, r, "mcpepoch status shows the server's state")
	if st := p.statusGaveUp(); st.State != host.StateDown {
		t.Errorf("state %s, want down", st.State)
	}
}

// A call held while the new epoch starts that the client cancels
// (notifications/cancelled) is never forwarded to the new server, nor
// answered: the write the client gave up on does not run once the server
// is up. A call sent after it is forwarded.
func TestHeldCallCancelled(t *testing.T) {
	t.Parallel()
	p := drainProject(t, "")
	c := startRaw(t, p, nil)
	c.initialize()
	wantText(t, c.callWait("version", nil), "revision=A")

	p.server("sleep 1\n", map[string]string{"FIXTURE_COUNTER_DIR": p.counter, "FIXTURE_REVISION": "B"}) // a slow-starting build
	rec := p.background("record", "--dir", p.dir)
	p.waitState(host.StateIdentityPending, waitLong)
	c.sendLine([]byte(`{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"slow_write","arguments":{"key":"gaveup"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":900,"reason":"changed my mind"}}` + "\n" +
		`{"jsonrpc":"2.0","id":901,"method":"tools/call","params":{"name":"slow_write","arguments":{"key":"wanted"}}}`))
	wantText(t, c.response("901", waitLong), "revision=B")
	rec.wait(t)
	if got := p.read("counter/gaveup.started"); got != "" {
		t.Fatalf("the call cancelled while held reached the new server: %q", got)
	}
	if rs := c.responses("900"); len(rs) != 0 {
		t.Fatalf("the cancelled call was answered: %v", rs[0])
	}
}
