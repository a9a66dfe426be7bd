// Command lstatwalk is the floor of a warm tree check: it walks DIR and
// lstats every entry, as any walk that must notice a change has to, and
// prints the median time of ROUNDS walks. With -make N it first fills DIR
// with N small files in directories of 50, a synthetic dependency tree.
//
// Usage: lstatwalk [-make N] [-rounds R] DIR
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	make_ := flag.Int("make", 0, "fill DIR with this many files first")
	rounds := flag.Int("rounds", 9, "walks to take the median of")
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if *make_ > 0 {
		if err := fill(dir, *make_); err != nil {
			fmt.Fprintln(os.Stderr, "lstatwalk:", err)
			os.Exit(1)
		}
		return
	}
	var times []time.Duration
	n := 0
	for range *rounds {
		t := time.Now()
		n = 0
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				os.Lstat(p)
				n++
			}
			return nil
		})
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	fmt.Printf("%.2f ms for %d entries\n", float64(times[len(times)/2])/1e6, n)
}

func fill(dir string, n int) error {
	body := []byte(strings.Repeat("module.exports = 1;\n", 10))
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/50), "lib")
		if i%50 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d.js", i%50)), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
