package main

import (
	"context"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/localapi"
)

func runHost(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("host", stdio.Err, "[flags] -- CMD [ARGS...]")
	dirFlag := fs.String("dir", ".", "project root: the server's working directory, where mcpepoch.toml and .mcpepoch/ are")
	label := fs.String("label", "", "server label (default: label in mcpepoch.toml, else the directory name)")
	grace := fs.Duration("grace", 0, "how long a stopping server gets after SIGTERM before SIGKILL (default: host.grace in mcpepoch.toml, else 5s)")
	mode := fs.String("restart", "", "restart mode on new code: keep (keep the connection, announce the new epoch), close (close the connection so the client reconnects), manual (wait for 'mcpepoch restart'); default: host.restart in mcpepoch.toml, else keep")
	maxLine := fs.Int("max-message", 16<<20, "largest message passed in either direction, in bytes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *maxLine <= 0 {
		return usageError("--max-message %d: want a positive number of bytes", *maxLine)
	}
	if *grace < 0 {
		return usageError("--grace %s: want a duration of zero or more (0: host.grace in mcpepoch.toml, else 5s)", *grace)
	}
	command := fs.Args()
	root, cfg, err := loadProject(*dirFlag)
	if err != nil {
		return err
	}
	if len(command) == 0 {
		command = cfg.Command
	}
	if len(command) == 0 {
		return &exitError{code: exitUsage, err: errorf("no server command"), hints: []string{
			"run 'mcpepoch host -- node dist/server.js', or set command in mcpepoch.toml",
		}}
	}
	name := *label
	if name == "" {
		name = cfg.Label
	}
	if name == "" {
		name = filepath.Base(root)
	}
	g := *grace
	if g == 0 {
		if g, err = cfg.Grace(); err != nil {
			return err
		}
	}
	m := *mode
	if m == "" {
		m = cfg.Host.Restart
	}
	switch localapi.Mode(m) {
	case "", localapi.ModeKeep, localapi.ModeClose, localapi.ModeManual:
	default:
		return usageError("--restart %q: want keep, close or manual", m)
	}
	spec := cfg.Spec(root)
	spec.Unbuilt = true // the client may start the host before the first build
	h := host.New(host.Options{
		Mode:   localapi.Mode(m),
		Policy: grant.NewPolicy(cfg),
		Dir:    root, Command: command, Label: name, Grace: g, MaxLine: *maxLine,
		Spec:  spec,
		Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err,
	})
	return h.Run(ctx)
}
