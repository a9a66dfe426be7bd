package testenv

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BuildTimeout bounds a command that builds release binaries (several
// GOOS/GOARCH links of the whole program, cold): minutes of CPU, which a
// loaded 2-core machine stretches several times over.
const BuildTimeout = 8 * time.Minute

// RunWithin is Run bounded by limit instead of CommandTimeout.
func RunWithin(t testing.TB, limit time.Duration, dir string, env []string, name string, args ...string) (Output, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = Environ(env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var all, stdout, stderr Buffer
	cmd.Stdout = io.MultiWriter(&all, &stdout)
	cmd.Stderr = io.MultiWriter(&all, &stderr)
	err := cmd.Run()
	out := Output{Combined: all.String(), Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("%s %s in %s: no exit within %s\n%s", name, strings.Join(args, " "), dir, limit, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %s in %s: %v", name, strings.Join(args, " "), dir, err)
	}
	return out, 0
}
