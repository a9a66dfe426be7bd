package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// widenChild, when set, names the n a child test process passes to
// WidenParallel before printing the -parallel it ends with.
const widenChild = "TESTENV_WIDEN_CHILD"

func TestWidenParallelChild(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(widenChild))
	if err != nil {
		t.Skip("run by TestWidenParallel")
	}
	WidenParallel(n)
	fmt.Printf("parallel=%s\n", flag.Lookup("test.parallel").Value)
}

// TestWidenParallel runs this test binary with and without -parallel: the
// flag's default is raised, a value given is kept.
func TestWidenParallel(t *testing.T) {
	t.Parallel()
	want := runtime.GOMAXPROCS(0) + 3
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, want},
		{[]string{"-test.parallel=1"}, 1},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestWidenParallelChild$", "-test.v"}, tc.args...)...)
		cmd.Env = append(os.Environ(), widenChild+"="+strconv.Itoa(want))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
		if line := "parallel=" + strconv.Itoa(tc.want); !strings.Contains(string(out), line+"\n") {
			t.Errorf("args %q: no line %s in:\n%s", tc.args, line, out)
		}
	}
}
