package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
)

// RestartModes are the values of host.restart and --restart, the default
// first: keep the client's connection and announce the new epoch, close it
// so the client reconnects, or hold the restart until mcpepoch restart.
var RestartModes = []string{"keep", "close", "manual"}

// Flags are the settings a command line gave. A zero field was not given.
type Flags struct {
	Label     string        // --label
	Command   []string      // --command (record), the arguments after -- (host); nil: not given
	Entry     string        // --entry
	Lockfiles []string      // --lockfile, repeated
	Restart   string        // --restart
	Grace     time.Duration // --grace
}

// Settings are what a command runs with once precedence is applied.
type Settings struct {
	// Config is the file the settings were resolved from.
	Config  *Config
	Root    string
	Label   string
	Command []string
	// Restart is one of RestartModes.
	Restart string
	Grace   time.Duration
	// Spec is the identity inputs (Config.Spec) with Command, and the
	// entry and lockfiles the flags override.
	Spec build.Spec
}

// FlagError is a bad value given on the command line.
type FlagError struct {
	Flag  string // without dashes
	Value string
	Want  string
}

func (e *FlagError) Error() string { return fmt.Sprintf("--%s %q: want %s", e.Flag, e.Value, e.Want) }

// Resolve is the one place where a flag given on the command line, the
// value in mcpepoch.toml and the default meet: for each setting the first
// of them that is set wins.
//
//	label      --label      label        the base name of root
//	command    --command/-- command      none
//	entry      --entry      entry        inferred from the command (build)
//	lockfiles  --lockfile   lockfiles    standard names found in root (build)
//	restart    --restart    host.restart keep
//	grace      --grace      host.grace   5s
//
// root is the project root, absolute with symlinks resolved; c was read
// from it by Load (its values are already checked). A bad flag value is a
// *FlagError.
func (c *Config) Resolve(root string, f Flags) (*Settings, error) {
	s := &Settings{Config: c, Root: root, Label: first(f.Label, c.Label, filepath.Base(root)),
		Restart: first(f.Restart, c.Host.Restart, RestartModes[0]), Grace: f.Grace}
	if !validRestart(f.Restart) {
		return nil, &FlagError{Flag: "restart", Value: f.Restart, Want: "keep, close or manual"}
	}
	s.Command = f.Command
	if s.Command == nil {
		s.Command = c.Command
	}
	if s.Grace == 0 {
		g, err := c.Grace()
		if err != nil {
			return nil, &Error{Path: c.Path, Key: "host.grace", Err: err}
		}
		s.Grace = g
	}
	s.Spec = c.Spec(root)
	s.Spec.Command = s.Command
	if f.Entry != "" {
		s.Spec.Entry = f.Entry
	}
	if len(f.Lockfiles) > 0 {
		s.Spec.Lockfiles = f.Lockfiles
	}
	return s, nil
}

// validRestart reports whether s is a restart mode or empty (not set).
func validRestart(s string) bool { return s == "" || slices.Contains(RestartModes, s) }

// first returns the first non-empty string of vs.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
