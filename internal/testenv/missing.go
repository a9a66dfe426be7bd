package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the tests run in CI: the environment variable CI
// holds a true value ("true", "1"), as CI services and .ci/run set it.
func InCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// Missing ends a test that needs a program this machine does not have;
// why says which program and how to install it.
//
// In CI ([InCI]), where every program the tests use is installed first, it
// fails the test: a suite that skipped it would pass without running it.
// Elsewhere it skips the test. go test ./... prints nothing of a package
// whose tests pass, skips included, so the skip is also written to the
// terminal (/dev/tty) when there is one, and the developer sees which tests
// did not run and why without -v (the terminal OwnSession left, when it
// did).
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (CI=%s: CI installs every program the tests use)", why, os.Getenv("CI"))
	}
	if tty != nil {
		fmt.Fprintf(tty, "--- SKIP: %s: %s\n", t.Name(), why)
	} else if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintf(tty, "--- SKIP: %s: %s\n", t.Name(), why)
		tty.Close()
	}
	t.Skip(why)
}

// Make returns the path of make on PATH; without one it ends the test
// with [Missing].
func Make(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("make")
	if err != nil {
		Missing(t, "make is not on PATH: install make (apt-get install make, or Xcode's command line tools) to run this test")
	}
	return p
}
