package templates

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The tests in this file run the build hook templates under the real make and
// task programs, with a stand-in for mcpepoch that records its arguments. They
// are skipped when the program is not installed, and fail in CI (see
// testenv.Missing).

// hookDir returns a temporary project holding the template name, the file
// main (as mainName) and an executable stub that writes its arguments, one a
// line, to the file returned as out, then exits with status stubExit.
func hookDir(t *testing.T, name, mainName, main string, stubExit int) (dir, stub, out string) {
	t.Helper()
	dir = t.TempDir()
	b, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, mainName), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "stub.out")
	stub = filepath.Join(dir, "stub-mcpepoch")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + out + "'\nexit " + strconv.Itoa(stubExit) + "\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, stub, out
}

// run runs prog in dir with the environment of the test minus MCPEPOCH, plus
// env, and returns its exit status.
func run(t *testing.T, dir string, env []string, prog string, args ...string) int {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPEPOCH=") && !strings.HasPrefix(kv, "MCPEPOCH_FLAGS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	output, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", prog, strings.Join(args, " "), output)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// stubArgs returns the arguments the stub was last called with, or nil if it
// was not called.
func stubArgs(t *testing.T, out string) []string {
	t.Helper()
	b, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

const makefile = `include mcpepoch.mk

.PHONY: build
build:
	sh -c 'exit $(CODE)'; $(MCPEPOCH_RECORD)
`

func TestMakeHook(t *testing.T) {
	t.Parallel()
	mk := testenv.Make(t)
	for _, tc := range []struct {
		name     string
		code     int // the build's exit status
		stubExit int
		viaEnv   bool // MCPEPOCH from the environment instead of the command line
		flags    string
		errexit  bool // the recipe shell runs with -e (as under .POSIX)
		wantFail bool
		wantArgs []string
	}{
		{name: "success", code: 0, wantArgs: []string{"record", "--exit-code", "0"}},
		{name: "failure", code: 3, wantFail: true, wantArgs: []string{"record", "--exit-code", "3"}},
		{name: "env", code: 5, viaEnv: true, wantFail: true, wantArgs: []string{"record", "--exit-code", "5"}},
		{name: "flags", code: 0, flags: "--require-host", wantArgs: []string{"record", "--exit-code", "0", "--require-host"}},
		{name: "hook fails", code: 0, stubExit: 1, wantArgs: []string{"record", "--exit-code", "0"}},
		{name: "hook fails errexit", code: 0, stubExit: 1, errexit: true, wantArgs: []string{"record", "--exit-code", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mf := makefile
			if tc.errexit {
				mf = ".SHELLFLAGS = -ec\n" + mf
			}
			dir, stub, out := hookDir(t, "mcpepoch.mk", "Makefile", mf, tc.stubExit)
			args := []string{"build", "CODE=" + strconv.Itoa(tc.code)}
			var env []string
			if tc.viaEnv {
				env = append(env, "MCPEPOCH="+stub)
			} else {
				args = append(args, "MCPEPOCH="+stub)
			}
			if tc.flags != "" {
				args = append(args, "MCPEPOCH_FLAGS="+tc.flags)
			}
			status := run(t, dir, env, mk, args...)
			if (status != 0) != tc.wantFail {
				t.Errorf("make exit status %d, want failure %v", status, tc.wantFail)
			}
			if got := stubArgs(t, out); !slices.Equal(got, tc.wantArgs) {
				t.Errorf("hook called with %q, want %q", got, tc.wantArgs)
			}
		})
	}
}

// taskfile uses the record task the way the comment in mcpepoch.Taskfile.yml
// shows.
const taskfile = `version: '3'

includes:
  mcpepoch: ./mcpepoch.Taskfile.yml

tasks:
  build:
    cmds:
      - defer: {task: mcpepoch:record, vars: {EXIT_CODE: '{{.EXIT_CODE | default 0}}'}}
      - exit {{.CODE}}
`

func TestTaskfileHook(t *testing.T) {
	t.Parallel()
	task := testenv.Task(t)
	for _, tc := range []struct {
		name     string
		code     int
		stubExit int
		viaEnv   bool
		flags    string
		wantArgs []string
	}{
		{name: "success", code: 0, wantArgs: []string{"record", "--exit-code", "0"}},
		{name: "failure", code: 3, wantArgs: []string{"record", "--exit-code", "3"}},
		{name: "env", code: 5, viaEnv: true, wantArgs: []string{"record", "--exit-code", "5"}},
		{name: "flags", code: 0, flags: "--require-host", wantArgs: []string{"record", "--exit-code", "0", "--require-host"}},
		{name: "hook fails", code: 0, stubExit: 1, wantArgs: []string{"record", "--exit-code", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, stub, out := hookDir(t, "mcpepoch.Taskfile.yml", "Taskfile.yml", taskfile, tc.stubExit)
			// --exit-code makes task exit with the failing command's status.
			args := []string{"--exit-code", "build", "CODE=" + strconv.Itoa(tc.code)}
			var env []string
			if tc.viaEnv {
				env = append(env, "MCPEPOCH="+stub)
			} else {
				args = append(args, "MCPEPOCH="+stub)
			}
			if tc.flags != "" {
				args = append(args, "MCPEPOCH_FLAGS="+tc.flags)
			}
			if status := run(t, dir, env, task, args...); status != tc.code {
				t.Errorf("task exit status %d, want %d", status, tc.code)
			}
			if got := stubArgs(t, out); !slices.Equal(got, tc.wantArgs) {
				t.Errorf("hook called with %q, want %q", got, tc.wantArgs)
			}
		})
	}
}
