// Command echoclient measures, in one run and interleaved, what a stdio
// middle process adds to MCP tools/call: the echo server connected
// directly, through the splice proxy, through the durable proxy (the
// splice proxy's work plus the audit log's writes: the anchor of the
// targets) and through mcpepoch host. It prints one table (see
// scripts/bench.sh, which builds and runs it).
//
// Usage: echoclient -server BIN -splice BIN -durable BIN -mcpepoch BIN -dir PROJECT [-before BIN]
//
// With -before, a second mcpepoch binary (an earlier build) runs in its
// own copy of the project as a fifth connection, interleaved with the
// others, so that a change is measured before and after in one run; the
// audit backlog, restart and RSS figures are the -mcpepoch host's.
//
// With -load small, callers or restart it runs only the host, under that
// one load, and prints its calls/s and CPU per call; -syscalls counts its
// system calls (perf stat, else strace) and -cpuprofile has it write CPU,
// mutex and block profiles (MCPEPOCH_CPUPROFILE): scripts/bench.sh
// profile.
//
// Usage: echoclient -load small|callers|restart -server BIN -mcpepoch BIN -dir PROJECT [-n N] [-for D] [-restarts N] [-syscalls] [-cpuprofile FILE]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	server   = flag.String("server", "", "the echo server binary")
	splice   = flag.String("splice", "", "the splice proxy binary")
	durable  = flag.String("durable", "", "the durable proxy binary")
	mcpepoch = flag.String("mcpepoch", "", "the mcpepoch binary")
	dir      = flag.String("dir", "", "the project directory mcpepoch host runs in (mcpepoch.toml, .mcpepoch/)")
	rounds   = flag.Int("rounds", 15, "interleaved rounds of each measurement")
	before   = flag.String("before", "", "an earlier mcpepoch binary, measured side by side in its own copy of -dir")
)

var echoParams = `{"name":"echo","arguments":{"text":"` + strings.Repeat("a", 120) + `"}}`

func main() {
	flag.Parse()
	if *load != "" && *server != "" && *mcpepoch != "" && *dir != "" {
		runLoad()
		return
	}
	if *server == "" || *splice == "" || *durable == "" || *mcpepoch == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	durableLog, err := os.CreateTemp("", "durableproxy-*.log")
	if err != nil {
		fail(err)
	}
	durableLog.Close()
	defer os.Remove(durableLog.Name())
	configs := [][]string{{*server}, {*splice, *server}, {*durable, durableLog.Name(), *server}, {*mcpepoch, "host", "--dir", *dir, "--", *server}}
	names := []string{"direct", "splice proxy", "durable proxy", "mcpepoch host"}
	if *before != "" {
		bdir, bserver, err := copyProject(*dir, *server)
		if err != nil {
			fail(err)
		}
		configs = append(configs, []string{*before, "host", "--dir", bdir, "--", bserver})
		names = append(names, "host -before")
	}
	var ss []*session
	for i, argv := range configs {
		s, err := start(names[i], argv, *dir)
		if err != nil {
			fail(err)
		}
		defer s.close()
		ss = append(ss, s)
	}
	host := ss[3]
	time.Sleep(300 * time.Millisecond) // the host fetches its first catalog
	idleRSS := host.rss()

	small, cpu := measureSmall(ss, 200)
	conc := measureConcurrent(ss, time.Second)
	big := measureBig(ss, 4, "big", 1<<20)
	big5 := measureBig(ss, 2, "big5", 5<<20)
	printTable(names, small, cpu, conc, big, big5)

	backlog := measureBacklog(host, 8000)
	for host.calls < 10000 {
		if _, err := host.call("tools/call", echoParams); err != nil {
			fail(err)
		}
		host.calls++
	}
	restart, own := measureRestart(host)
	busy, left, answered := measureRestartBusy(host, slowCall)
	fmt.Println()
	fmt.Printf("audit backlog after a burst of 8,000 calls (8 callers): %s\n", ms(backlog))
	fmt.Printf("restart: mcpepoch restart -> notifications/tools/list_changed %s; the server's own start to its initialize answer %s; overhead %s\n",
		ms(restart), ms(own), ms(restart-own))
	fmt.Printf("restart with one %s call in flight (host.drain): -> list_changed %s, of which the call's remaining %s; overhead over an idle restart %s, %s beyond the wait for the call; the call got %s\n",
		slowCall, ms(busy), ms(left), ms(busy-restart), ms(busy-restart-left), answered)
	fmt.Printf("host RSS: %.1f MiB idle, %.1f MiB after %d calls\n", idleRSS, host.rss(), host.calls)
}

// measureSmall makes rounds×batch sequential echo calls on each session,
// a batch at a time in turn, and returns each session's latencies and
// CPU time per call.
func measureSmall(ss []*session, batch int) ([][]time.Duration, []time.Duration) {
	lat := make([][]time.Duration, len(ss))
	cpu := make([]time.Duration, len(ss))
	for range *rounds {
		for i, s := range ss {
			c0 := s.cpu()
			for range batch {
				t := time.Now()
				if _, err := s.call("tools/call", echoParams); err != nil {
					fail(err)
				}
				lat[i] = append(lat[i], time.Since(t))
			}
			cpu[i] += s.cpu() - c0
			s.calls += batch
		}
	}
	for i := range cpu {
		cpu[i] /= time.Duration(*rounds * batch)
	}
	return lat, cpu
}

// measureConcurrent runs 8 callers on each session for d, in turn, three
// rounds, and returns the median calls per second of each.
func measureConcurrent(ss []*session, d time.Duration) []float64 {
	rates := make([][]time.Duration, len(ss)) // as calls/s × 1, kept sortable
	for range 3 {
		for i, s := range ss {
			n := burst(s, 8, 0, d)
			rates[i] = append(rates[i], time.Duration(float64(n)/d.Seconds()))
		}
	}
	out := make([]float64, len(ss))
	for i := range ss {
		out[i] = float64(median(rates[i]))
	}
	return out
}

// burst runs callers goroutines calling echo on s until total calls are
// made (total > 0) or for d, and returns the number of calls made.
func burst(s *session, callers, total int, d time.Duration) int {
	var mu sync.Mutex
	n := 0
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				mu.Lock()
				if (total > 0 && n >= total) || (total == 0 && time.Now().After(deadline)) {
					mu.Unlock()
					return
				}
				n++
				mu.Unlock()
				if _, err := s.call("tools/call", echoParams); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	s.calls += n
	return n
}

// measureBig makes rounds×batch calls of tool (at least size bytes) on
// each session in turn and returns their latencies.
func measureBig(ss []*session, batch int, tool string, size int) [][]time.Duration {
	lat := make([][]time.Duration, len(ss))
	for range *rounds {
		for i, s := range ss {
			for range batch {
				t := time.Now()
				line, err := s.call("tools/call", `{"name":"`+tool+`","arguments":{}}`)
				if err != nil {
					fail(err)
				}
				if len(line) < size {
					fail(fmt.Errorf("%s: %s answer of %d bytes", s.name, tool, len(line)))
				}
				lat[i] = append(lat[i], time.Since(t))
			}
			s.calls += batch
		}
	}
	return lat
}

// measureBacklog waits until the audit log holds a tool_result for every
// call made so far, makes n calls from 8 callers, and returns how long
// after the last answer the log took to hold all of theirs.
func measureBacklog(s *session, n int) time.Duration {
	log := &auditCounter{path: *dir + "/.mcpepoch/audit.jsonl"}
	if !log.waitFor(s.calls, 60*time.Second) {
		fail(fmt.Errorf("the audit log holds %d tool_result records, want %d", log.n, s.calls))
	}
	burst(s, 8, n, 0)
	end := time.Now()
	if !log.waitFor(s.calls, 60*time.Second) {
		fail(fmt.Errorf("after the burst the audit log holds %d tool_result records, want %d", log.n, s.calls))
	}
	return time.Since(end)
}

// auditCounter counts tool_result records in a growing audit log, reading
// only what was appended since its last look.
type auditCounter struct {
	path string
	off  int64
	n    int
	tail []byte
}

func (a *auditCounter) waitFor(want int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if f, err := os.Open(a.path); err == nil {
			buf := make([]byte, 1<<20)
			for {
				k, err := f.ReadAt(buf, a.off)
				a.off += int64(k)
				data := append(a.tail, buf[:k]...)
				if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
					a.n += bytes.Count(data[:i], []byte(`"type":"tool_result"`))
					a.tail = append([]byte(nil), data[i+1:]...)
				} else {
					a.tail = data
				}
				if err != nil || k == 0 {
					break
				}
			}
			f.Close()
		}
		if a.n >= want {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// measureRestart times mcpepoch restart until the host's
// notifications/tools/list_changed, and the server's own start to its
// initialize answer, medians of five each.
func measureRestart(s *session) (restart, own time.Duration) {
	var rs, os_ []time.Duration
	for range 5 {
		r, o := restartOnce(s)
		rs, os_ = append(rs, r), append(os_, o)
	}
	return median(rs), median(os_)
}

// restartOnce times one mcpepoch restart until the host's
// notifications/tools/list_changed, then the server's own start to its
// initialize answer.
func restartOnce(s *session) (restart, own time.Duration) {
	for len(s.notes) > 0 {
		<-s.notes
	}
	t := time.Now()
	cmd := exec.Command(*mcpepoch, "restart")
	cmd.Dir = *dir
	if out, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("mcpepoch restart: %v: %s", err, out))
	}
	for got := ""; got != "notifications/tools/list_changed"; {
		select {
		case got = <-s.notes:
		case <-time.After(20 * time.Second):
			fail(fmt.Errorf("no list_changed within 20 s of mcpepoch restart"))
		}
	}
	restart = time.Since(t)
	t = time.Now()
	d, err := start("direct", []string{*server}, *dir)
	if err != nil {
		fail(err)
	}
	own = time.Since(t)
	d.close()
	time.Sleep(200 * time.Millisecond)
	return restart, own
}

// slowCall is how long the call in flight at measureRestartBusy's
// restarts takes.
const slowCall = 500 * time.Millisecond

// measureRestartBusy times mcpepoch restart until the host's
// notifications/tools/list_changed while one call of the slow tool (d)
// is in flight, medians of five: with host.drain the restart waits for
// its answer, which it delivers. left is what remained of the call when
// the restart began, and answered says how the calls ended ("its
// result" when each was delivered).
func measureRestartBusy(s *session, d time.Duration) (restart, left time.Duration, answered string) {
	var rs, ls []time.Duration
	results, errs := 0, 0
	for range 5 {
		for len(s.notes) > 0 {
			<-s.notes
		}
		sent := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := s.call("tools/call", fmt.Sprintf(`{"name":"slow","arguments":{"text":"x","ms":%d}}`, d.Milliseconds()))
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // the call reaches the server
		t := time.Now()
		ls = append(ls, d-t.Sub(sent))
		cmd := exec.Command(*mcpepoch, "restart")
		cmd.Dir = *dir
		if out, err := cmd.CombinedOutput(); err != nil {
			fail(fmt.Errorf("mcpepoch restart: %v: %s", err, out))
		}
		for got := ""; got != "notifications/tools/list_changed"; {
			select {
			case got = <-s.notes:
			case <-time.After(20 * time.Second):
				fail(fmt.Errorf("no list_changed within 20 s of mcpepoch restart"))
			}
		}
		rs = append(rs, time.Since(t))
		if err := <-done; err != nil {
			errs++
		} else {
			results++
		}
		time.Sleep(200 * time.Millisecond)
	}
	answered = fmt.Sprintf("its result %d of 5 times, an error %d", results, errs)
	return median(rs), median(ls), answered
}

// copyProject makes a sibling of dir holding its mcpepoch.toml and a copy
// of the server, so that the -before host has an audit log and state of
// its own and runs a server of its own project (a launch whose identity
// hashes no file of the project is refused); it returns the sibling and
// the server's path in it.
func copyProject(dir, server string) (string, string, error) {
	out := strings.TrimSuffix(dir, "/") + "-before"
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", "", err
	}
	bin, err := os.ReadFile(server)
	if err != nil {
		return "", "", err
	}
	copied := out + "/" + filepath.Base(server)
	if err := os.WriteFile(copied, bin, 0o700); err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(dir + "/mcpepoch.toml")
	if err != nil {
		return "", "", err
	}
	b = bytes.ReplaceAll(b, []byte(strconv.Quote(server)), []byte(strconv.Quote(copied)))
	return out, copied, os.WriteFile(out+"/mcpepoch.toml", b, 0o600)
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "echoclient:", err)
	os.Exit(1)
}
