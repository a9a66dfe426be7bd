// Command inittrace runs a Go program many times with GODEBUG=inittrace=1
// and prints what its package initialisation costs: the number of
// packages that run an init, the median of their summed init time per
// run, the packages of a module prefix (our own) summed, and the costliest
// packages by median time, with the bytes they allocate.
//
// Usage: inittrace [-rounds N] [-top K] [-own PREFIX] CMD ARG...
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// pkgInit is one package's init as the runtime traced it in one run.
type pkgInit struct {
	ms    float64
	bytes int64
}

func main() {
	rounds := flag.Int("rounds", 30, "runs of the command")
	top := flag.Int("top", 10, "packages to list")
	own := flag.String("own", "github.com/mcpepoch/mcpepoch/", "import path prefix summed as our own")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	perPkg := map[string][]pkgInit{}
	var totals, owns []float64
	for range *rounds {
		inits, err := trace(flag.Args())
		if err != nil {
			fmt.Fprintln(os.Stderr, "inittrace:", err)
			os.Exit(1)
		}
		var total, ownTotal float64
		for pkg, in := range inits {
			perPkg[pkg] = append(perPkg[pkg], in)
			total += in.ms
			if strings.HasPrefix(pkg, *own) {
				ownTotal += in.ms
			}
		}
		totals, owns = append(totals, total), append(owns, ownTotal)
	}
	type row struct {
		pkg   string
		ms    float64
		bytes int64
	}
	var rows []row
	for pkg, ins := range perPkg {
		ms := make([]float64, len(ins))
		for i, in := range ins {
			ms[i] = in.ms
		}
		rows = append(rows, row{pkg, median(ms), ins[0].bytes})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.ms != b.ms {
			if a.ms > b.ms {
				return -1
			}
			return 1
		}
		return strings.Compare(a.pkg, b.pkg)
	})
	fmt.Printf("%d package inits, %.2f ms per run (median of %d runs), %s*: %.2f ms\n",
		len(rows), median(totals), *rounds, *own, median(owns))
	for _, r := range rows[:min(*top, len(rows))] {
		fmt.Printf("  %-55s %5.2f ms %8d bytes\n", r.pkg, r.ms, r.bytes)
	}
}

// trace runs argv once and returns each package's init from the trace
// the runtime writes to stderr (runtime/debug: GODEBUG inittrace=1):
//
//	init PKG @T ms, D ms clock, B bytes, N allocs
//
// The runtime's own line is left out: every Go program pays it.
func trace(argv []string) (map[string]pkgInit, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, stderr.Bytes())
	}
	inits := map[string]pkgInit{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || f[1] == "runtime" || f[6] != "clock," {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		b, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("unexpected trace line %q", sc.Text())
		}
		inits[f[1]] = pkgInit{ms, b}
	}
	if len(inits) == 0 {
		return nil, fmt.Errorf("%s wrote no init trace", strings.Join(argv, " "))
	}
	return inits, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
