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

// Need returns the path of the program prog on PATH. When PATH has none it
// ends the test with [Missing], naming prog and install, how to get it
// (for instance [InstallPython]).
//
// A program that is there but cannot do what the test needs (python3
// without its venv module, a cc that cannot link a shared library) is
// missing as well: call [Missing] with what failed and how to install
// what it lacks.
func Need(t testing.TB, prog, install string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		Missing(t, fmt.Sprintf("%s is not on PATH: %s to run this test", prog, install))
	}
	return p
}

// How to install the programs several packages' tests [Need]. Each names
// the Debian package CI installs (.ci/run) and the macOS way.
const (
	// InstallPython: python3 and its venv module.
	InstallPython = "install Python 3 (apt-get install python3 python3-venv, or brew install python)"
	// InstallCC: a C compiler that links shared libraries.
	InstallCC = "install a C compiler (apt-get install gcc, or Xcode's command line tools)"
	// InstallUtilLinux: script, setsid and flock.
	InstallUtilLinux = "install util-linux (apt-get install util-linux bsdutils; on macOS brew install util-linux)"
	// InstallCoreutils: env, mkfifo, timeout.
	InstallCoreutils = "install coreutils (apt-get install coreutils, or brew install coreutils)"
	// InstallProcps: ps.
	InstallProcps = "install procps (apt-get install procps)"
)

// Make returns the path of make on PATH; without one it ends the test
// with [Missing].
func Make(t testing.TB) string {
	t.Helper()
	return Need(t, "make", "install make (apt-get install make, or Xcode's command line tools)")
}
