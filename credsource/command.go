package credsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// DefaultCommandTimeout bounds a command source when the caller's context
// has no deadline.
const DefaultCommandTimeout = 30 * time.Second

// lookPath finds the program of a command source as exec.Command would,
// a relative path taken from the project root.
func lookPath(dir, prog string) (string, error) {
	if filepath.Base(prog) != prog && !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		return "", fmt.Errorf("%s: program not found", prog)
	}
	return p, nil
}

// capped is a writer that keeps the first max bytes and counts the rest.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// runCommand runs a command source in its own process group, which is
// killed when ctx ends. Its errors say how it ended, never what it printed:
// stderr is discarded, since a failing secret tool may echo what it read.
// start and done, when set, start the process and are told its pid once
// it has been waited for (Set.SetStarter).
func runCommand(ctx context.Context, dir string, argv []string, start func(*exec.Cmd) error, done func(int)) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCommandTimeout)
		defer cancel()
	}
	prog, err := lookPath(dir, argv[0])
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stderr = io.Discard
	out := &capped{max: MaxSecret + 1}
	cmd.Stdout = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("%s: %w", argv[0], err)
	}
	err = cmd.Wait()
	if done != nil {
		done(cmd.Process.Pid)
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s did not finish in time: %w", argv[0], context.Cause(ctx))
	}
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return "", fmt.Errorf("%s failed (%s); run it yourself to see why", argv[0], ee.ProcessState)
		}
		return "", fmt.Errorf("%s: %w", argv[0], err)
	}
	if out.over || out.buf.Len() > MaxSecret {
		return "", fmt.Errorf("%s printed more than %s", argv[0], safefile.Size(MaxSecret))
	}
	return out.buf.String(), nil
}
