package testenv

import (
	"flag"
	"runtime"
	"strconv"
)

// WidenParallel raises go test's -parallel to at least n when the flag was
// not given on the command line: its default, GOMAXPROCS, suits tests that
// keep the CPU busy, not end-to-end tests that mostly wait on the
// processes they start (a host, a server, node, make, task), of which more
// than there are cores fit. A -parallel given explicitly is kept, and so is
// a GOMAXPROCS of n or more. Call it from TestMain before m.Run; it parses
// the command line's flags if they are not yet parsed.
func WidenParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || runtime.GOMAXPROCS(0) >= n {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		panic("testenv: " + err.Error())
	}
}
