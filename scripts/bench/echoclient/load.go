package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	load       = flag.String("load", "", "instead of the table: only mcpepoch host, under one load: small (sequential echo calls, -n of them), callers (8 concurrent callers for -for) or restart (mcpepoch restart, -restarts times)")
	restarts   = flag.Int("restarts", 10, "with -load restart: how many restarts")
	loadN      = flag.Int("n", 20000, "with -load small: how many calls")
	loadFor    = flag.Duration("for", 3*time.Second, "with -load callers: for how long")
	cpuProfile = flag.String("cpuprofile", "", "with -load: the host writes a CPU profile of its run here (MCPEPOCH_CPUPROFILE)")
	syscalls   = flag.Bool("syscalls", false, "with -load: count the host's system calls during the load (perf trace, else strace) and print them per call")
)

// runLoad runs one load on a host alone and prints calls/s, CPU per call
// and, with -syscalls, the host's system calls per call by name. The
// host stops when the session closes, which writes its CPU profile.
func runLoad() {
	var env []string
	if *cpuProfile != "" {
		env = append(env, "MCPEPOCH_CPUPROFILE="+*cpuProfile)
	}
	s, err := start("mcpepoch host", []string{*mcpepoch, "host", "--dir", *dir, "--", *server}, *dir, env...)
	if err != nil {
		fail(err)
	}
	time.Sleep(300 * time.Millisecond) // the host fetches its first catalog
	for range 500 {                    // warm up
		if _, err := s.call("tools/call", echoParams); err != nil {
			fail(err)
		}
	}
	var counter *syscallCounter
	if *syscalls {
		if counter, err = countSyscalls(s.pid); err != nil {
			fail(err)
		}
	}
	c0, t0 := s.cpu(), time.Now()
	n := 0
	switch *load {
	case "small":
		for range *loadN {
			if _, err := s.call("tools/call", echoParams); err != nil {
				fail(err)
			}
		}
		n = *loadN
	case "callers":
		n = burst(s, 8, 0, *loadFor)
	case "restart":
		var rs, owns []time.Duration
		for range *restarts {
			r, own := restartOnce(s)
			rs, owns = append(rs, r), append(owns, own)
		}
		r, own := median(rs), median(owns)
		fmt.Printf("restart load: %d restarts: mcpepoch restart -> list_changed %s, the server's own start %s, overhead %s (medians); host CPU %.1f ms per restart\n",
			*restarts, ms(r), ms(own), ms(r-own), float64(s.cpu()-c0)/1e6/float64(*restarts))
		if counter != nil {
			counts, err := counter.stop()
			if err != nil {
				fail(err)
			}
			printSyscalls(counts, *restarts)
		}
		s.close()
		return
	default:
		fail(fmt.Errorf("-load %q: want small, callers or restart", *load))
	}
	el, cpu := time.Since(t0), s.cpu()-c0
	fmt.Printf("%s load: %d calls in %s, %.0f calls/s, host CPU %.1f µs per call\n", *load, n, el.Round(time.Millisecond),
		float64(n)/el.Seconds(), float64(cpu)/1e3/float64(n))
	if counter != nil {
		counts, err := counter.stop()
		if err != nil {
			fail(err)
		}
		printSyscalls(counts, n)
	}
	s.close()
}

// perfEvents are the system calls perf stat counts: the ones a host
// makes on its call path and in its background writes.
var perfEvents = func() string {
	var e []string
	for _, n := range strings.Fields("read write writev readv pread64 pwrite64 epoll_pwait epoll_wait epoll_ctl futex nanosleep newfstatat newfstat statx openat close fsync fdatasync flock getpid tgkill rt_sigreturn sched_yield madvise mmap munmap clock_gettime getrusage") {
		e = append(e, "syscalls:sys_enter_"+n)
	}
	return strings.Join(e, ",")
}()

// syscallCounter is a perf trace or strace attached to a process.
type syscallCounter struct {
	cmd  *exec.Cmd
	out  string
	perf bool
}

// countSyscalls attaches a counter of system calls to pid and its
// threads: perf trace -s where it works (cheaper, so the host is less
// slowed), else strace -c -f.
func countSyscalls(pid int) (*syscallCounter, error) {
	f, err := os.CreateTemp("", "echoclient-syscalls-*")
	if err != nil {
		return nil, err
	}
	f.Close()
	c := &syscallCounter{out: f.Name()}
	p := strconv.Itoa(pid)
	if os.Getenv("ECHOCLIENT_STRACE") == "" && exec.Command("perf", "stat", "-e", perfEvents, "--", "true").Run() == nil {
		c.perf = true
		c.cmd = exec.Command("perf", "stat", "-e", perfEvents, "-x", ",", "-o", c.out, "-p", p)
	} else {
		c.cmd = exec.Command("strace", "-c", "-f", "-o", c.out, "-p", p)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %v", c.cmd.Path, err)
	}
	time.Sleep(time.Second) // attached
	return c, nil
}

// stop detaches the counter and returns its calls and errors by name.
func (c *syscallCounter) stop() (map[string][2]int, error) {
	c.cmd.Process.Signal(syscall.SIGINT)
	c.cmd.Wait()
	defer os.Remove(c.out)
	f, err := os.Open(c.out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string][2]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// perf trace -s: "name calls errors total min avg max stddev%",
		// per thread; strace -c: "%time seconds usecs/call calls [errors] name".
		var name string
		var calls, errs int
		switch {
		case c.perf && strings.Contains(sc.Text(), "syscalls:sys_enter_"):
			fs = strings.Split(sc.Text(), ",")
			calls, _ = strconv.Atoi(fs[0])
			name = strings.TrimPrefix(fs[2], "syscalls:sys_enter_")
		case !c.perf && (len(fs) == 5 || len(fs) == 6) && fs[len(fs)-1] != "total" && fs[len(fs)-1] != "syscall":
			name = fs[len(fs)-1]
			calls, _ = strconv.Atoi(fs[3])
			if len(fs) == 6 {
				errs, _ = strconv.Atoi(fs[4])
			}
		default:
			continue
		}
		if calls == 0 {
			continue
		}
		v := counts[name]
		counts[name] = [2]int{v[0] + calls, v[1] + errs}
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("%s counted no system call", c.cmd.Path)
	}
	return counts, nil
}

func printSyscalls(counts map[string][2]int, n int) {
	names := make([]string, 0, len(counts))
	total := 0
	for k, v := range counts {
		names = append(names, k)
		total += v[0]
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]][0] > counts[names[j]][0] })
	fmt.Printf("host system calls per call: %.1f;", float64(total)/float64(n))
	for _, k := range names {
		v := counts[k]
		if float64(v[0])/float64(n) < 0.05 {
			continue
		}
		fmt.Printf(" %s %.2f", k, float64(v[0])/float64(n))
		if v[1] > 0 {
			fmt.Printf(" (%.2f failed)", float64(v[1])/float64(n))
		}
	}
	fmt.Println()
}
