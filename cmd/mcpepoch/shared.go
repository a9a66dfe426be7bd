package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/notify"
)

// What the commands share with record, which lives in internal/cli.

// resolveProject is cli.ResolveProject.
func resolveProject(dir string, f config.Flags) (*config.Settings, error) {
	return cli.ResolveProject(dir, f)
}

// projectRoot is cli.ProjectRoot.
func projectRoot(dir string) (string, error) { return cli.ProjectRoot(dir) }

// perHost is cli.PerHost.
func perHost(out, errw io.Writer, results []notify.Result, line func(notify.Result) (lines []string, ok bool)) (failed int) {
	return cli.PerHost(out, errw, results, line)
}

// shortRun is cli.ShortRun.
func shortRun(run, socket string) string { return cli.ShortRun(run, socket) }

// statusLine is cli.StatusLine.
func statusLine(r notify.Response) string { return cli.StatusLine(r) }

// hostErrorLine is cli.HostErrorLine.
func hostErrorLine(root string, r notify.Result) string { return cli.HostErrorLine(root, r) }

// interruptible is hook.Interruptible, for commands other than record.
func interruptible[T any](ctx context.Context, what string, f func() (T, error), undo func(T)) (T, error) {
	return hook.Interruptible(ctx, what, f, undo)
}

// self is the mcpepoch that client configs and build hooks should run:
// this executable, by absolute path with symlinks resolved.
func self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return exe, nil
}
