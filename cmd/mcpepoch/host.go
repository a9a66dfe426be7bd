package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpepoch/mcpepoch/build"
	"os"
	"os/signal"
	"slices"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/credenv"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
)

func runHost(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("host", stdio.Err, "[flags] -- CMD [ARGS...]")
	dirFlag := fs.String("dir", ".", "project root: the server's working directory, where mcpepoch.toml and .mcpepoch/ are")
	label := fs.String("label", "", "server label (default: label in mcpepoch.toml, else the directory name)")
	grace := fs.Duration("grace", 0, "how long a stopping server gets after SIGTERM before SIGKILL (default: host.grace in mcpepoch.toml, else 5s)")
	mode := fs.String("restart", "", "restart mode on new code: keep (keep the connection, announce the new epoch), close (close the connection so the client reconnects), manual (wait for '"+selfcmd.Name()+" restart'); default: host.restart in mcpepoch.toml, else keep")
	maxLine := fs.Int("max-message", 16<<20, "largest message passed in either direction, in bytes")
	var quiet, verbose bool
	shortLong(fs, &quiet, "q", "quiet", "leave routine lines out of the log (a server started, the socket, a catalog): epoch changes, refusals and problems stay")
	shortLong(fs, &verbose, "v", "verbose", "log every message from the client and the server, and every one to the client: kind, method, id and size, never params or results")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *maxLine <= 0 {
		return usageError("--max-message %d: want a positive number of bytes", *maxLine)
	}
	if *grace < 0 {
		return usageError("--grace %s: want a duration of zero or more (0: host.grace in mcpepoch.toml, else 5s)", *grace)
	}
	// Values of env credential sources an earlier start of this host
	// handed over before it started itself again without them (below).
	received, err := credenv.Received()
	if err != nil {
		return errorf("%v", err)
	}
	flags := config.Flags{Label: *label, Restart: *mode, Grace: *grace}
	if fs.NArg() > 0 {
		flags.Command = fs.Args()
	}
	set, err := resolveProject(*dirFlag, flags)
	if err != nil {
		return err
	}
	// The variables mcpepoch.toml names as env credential sources stay
	// in a process's initial environment, readable by any process of the
	// user for the host's whole life: the host starts itself again
	// without them, keeping their values in memory only.
	if err := credenv.Withhold(envSources(set.Config), received); err != nil {
		return errorf("%v", err)
	}
	if len(set.Command) == 0 {
		return &exitError{code: exitUsage, err: errorf("no server command"), hints: []string{
			"run 'mcpepoch host -- node dist/server.js', or set command in mcpepoch.toml",
		}}
	}
	firstWait, drain, drainDuring, initTimeout := config.DefaultFirstStartWait, config.DefaultDrain, false, config.DefaultInitTimeout
	if set.Config != nil {
		initTimeout, _ = set.Config.InitTimeout()
		firstWait, _ = set.Config.FirstStartWait() // checked by config.Load
		drain, _ = set.Config.Drain()
		drainDuring = set.Config.Host.DrainStart == config.DrainStartDuring
	}
	spec := set.Spec
	spec.Unbuilt = true // the client may start the host before the first build
	h := host.New(host.Options{
		Mode:   localapi.Mode(set.Restart),
		Policy: grant.NewPolicy(set.Config),
		Dir:    set.Root, Command: set.Command, Label: set.Label, Grace: set.Grace, MaxLine: *maxLine,
		Spec:  spec,
		Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err,
		AllowSelfReload: set.Config != nil && set.Config.AllowSelfReload,
		FirstStartWait:  firstWait,
		Drain:           drain,
		InitTimeout:     initTimeout,
		DrainDuring:     drainDuring,
		Credentials:     credentialsOf(set.Config),
		CredentialEnv:   credenv.Environ(received),
		Verbose:         verbose,
		Quiet:           quiet,
	})
	// Ctrl-C in the terminal of a client that runs the host reaches the
	// host too (the foreground process group): that is the person ending
	// the session, a normal stop, not an error. The server is stopped
	// either way; SIGTERM and SIGHUP still end the host with exit 1.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt)
	defer signal.Stop(interrupted)
	stopProfile := startProfile(stdio.Err)
	err = h.Run(ctx)
	stopProfile()
	var sr *host.SelfReloadError
	var unc *build.UncoveredError
	if errors.As(err, &sr) || errors.As(err, &unc) {
		return &exitError{code: exitUsage, err: err}
	}
	select {
	case <-interrupted:
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx)) {
			fmt.Fprintln(stdio.Err, "mcpepoch host: interrupted: server stopped")
			return nil
		}
	default:
	}
	return err
}

// envSources returns the variables cfg names as env credential sources
// ([credentials.NAME] env), sorted; none without cfg.
func envSources(cfg *config.Config) []string {
	var out []string
	for _, c := range credentialsOf(cfg) {
		if c.Env != "" && !slices.Contains(out, c.Env) {
			out = append(out, c.Env)
		}
	}
	slices.Sort(out)
	return out
}

// credentialsOf returns the credential scopes of cfg, nil without one.
func credentialsOf(cfg *config.Config) map[string]config.Credential {
	if cfg == nil {
		return nil
	}
	return cfg.Credentials
}
