package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// maxOwnInitBytes bounds what each of the project's packages may allocate
// while it is initialised. Every start of the binary pays for every
// package's init, mcpepoch version and record included: a table, regexp or
// template a package builds before main costs every command, so such
// things are built on first use (sync.OnceValue) or written as data
// (slices of constants, which need no code at start).
const maxOwnInitBytes = 2048

// No package of the project allocates more than maxOwnInitBytes at
// initialisation, as the runtime traces it (GODEBUG=inittrace=1) in a
// binary that links them all. Bytes, not time: they do not depend on the
// machine's load.
func TestPackageInitsAllocateLittle(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, N allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		pkg := f[1]
		if !strings.HasPrefix(pkg, "github.com/mcpepoch/mcpepoch/") || pkg == "github.com/mcpepoch/mcpepoch/cmd/mcpepoch" {
			continue // this test's own package holds its tests' fixtures too
		}
		seen++
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("trace line %q: %v", sc.Text(), err)
		}
		if n > maxOwnInitBytes {
			t.Errorf("package %s allocates %d bytes at initialisation (%s allocs), more than %d: build what it builds on first use",
				pkg, n, f[9], maxOwnInitBytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of the project's packages in:\n%s", stderr.Bytes())
	}
}
