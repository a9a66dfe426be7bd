// Command exectime times whole runs of commands, interleaved round by
// round, and prints each one's median and the ratio of each to the first:
// the start of a binary against an empty Go program's, with no shell or
// timer process in between.
//
// Usage: exectime [-rounds N] 'CMD ARG...' 'CMD ARG...'...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	rounds := flag.Int("rounds", 40, "runs of each command")
	flag.Parse()
	if flag.NArg() < 2 {
		flag.Usage()
		os.Exit(2)
	}
	times := make([][]time.Duration, flag.NArg())
	for r := range *rounds {
		for k := range flag.NArg() {
			i := (r + k) % flag.NArg() // rotate who goes first
			argv := strings.Fields(flag.Arg(i))
			t := time.Now()
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "exectime: %s: %v: %s\n", flag.Arg(i), err, out)
				os.Exit(1)
			}
			times[i] = append(times[i], time.Since(t))
		}
	}
	var base float64
	for i, ts := range times {
		slices.Sort(ts)
		m := float64(ts[len(ts)/2]) / 1e6
		if i == 0 {
			base = m
		}
		fmt.Printf("%-40s %6.2f ms median (fastest %.2f)  %.2fx\n", shortName(flag.Arg(i)), m, float64(ts[0])/1e6, m/base)
	}
}

func shortName(cmd string) string {
	f := strings.Fields(cmd)
	f[0] = f[0][strings.LastIndex(f[0], "/")+1:]
	return strings.Join(f, " ")
}
