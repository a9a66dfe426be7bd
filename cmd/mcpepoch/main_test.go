package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the mcpepoch command in scripts.
func TestMain(m *testing.M) {
	testscript.Main(wideParallel{m}, map[string]func(){
		"mcpepoch": func() { os.Exit(main1()) },
	})
}

// minParallel is how many tests run at once, at least, when go test is
// given no -parallel flag (see testenv.WidenParallel). Most tests here
// spend their time waiting on child processes (node, the host, make,
// task), not on the CPU, so more of them than there are cores fit.
const minParallel = 4

// wideParallel runs the tests with -parallel raised to minParallel unless
// the flag was given.
type wideParallel struct{ m *testing.M }

func (w wideParallel) Run() int {
	// The trust store and the policy floors live in the user's config
	// directory: the tests and the processes they start get one of their
	// own, never the user's.
	testenv.OwnSession() // the person checks see other packages' hosts
	defer testenv.UserConfig()()
	testenv.WidenParallel(minParallel)
	return w.m.Run()
}

// TestScript runs the CLI behaviours in testdata/script/*.txtar, one
// behaviour per script. Besides the standard commands, scripts have
//
//	exits N PROG ARGS...
//
// which runs PROG like exec and fails unless its exit status is exactly N; stdout and stderr are kept
// for the next stdout/stderr/cmp commands. $TEMPLATES is the templates/
// directory of the repository.
func TestScript(t *testing.T) {
	t.Parallel()
	templates, err := filepath.Abs(filepath.Join("..", "..", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TEMPLATES", templates)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
