// Package checkup finds what is wrong with how a server project is wired
// to mcpepoch: the build hook (missing, dropped by go-task, or after the
// build command), the build's sources (reaching .mcpepoch/, missing
// mcpepoch.toml), client configs (launching the server directly,
// mcpepoch without an absolute path, a host --dir that is not a directory
// or not this project, or an env that leaves the host no usable config
// directory), the launch command (an entry that
// does not exist, a server run from source, a console script of the
// project's virtualenv with no code tree hashed, code trees beside the
// project, noted), tsc without noEmitOnError,
// the socket path fallback, a manifest or audit log that does not verify,
// hosts still running with an older mcpepoch.toml, a hook command
// that is not this mcpepoch (not found, not executable, another version),
// and a credential scope whose source cannot be read (never its value). `mcpepoch doctor`
// prints what it finds, one line per problem, each with its fix.
package checkup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/project"
)

// Problem is one thing wrong, and how to fix it.
type Problem struct {
	Where string // a file, file:line, or a component ("sockets", "host RUN")
	What  string
	Fix   string
}

// Report is what Check found.
type Report struct {
	Problems []Problem
	Notes    []string // what is worth knowing and is not wrong
}

// Options are what Check cannot find out by itself.
type Options struct {
	// UserConfigDir holds per-user client configs (os.UserConfigDir).
	UserConfigDir string
	// Self is the absolute path of the running mcpepoch, for fixes that
	// point the hook at it; "" writes a placeholder.
	Self string
	// Version is the first line `mcpepoch version` prints for the running
	// mcpepoch; when set, the hook's mcpepoch is run as `CMD version` and
	// must print the same. "" skips that check.
	Version string
}

// check is one project being checked.
type check struct {
	root string
	p    *project.Project
	cfg  *config.Config
	pl   project.Plan
	r    *Report
	// outputWrong is set when output found the launched binary is not
	// what the build writes, or was written and not recorded.
	outputWrong bool
	// installs holds what incomplete found, per mcpepoch path.
	installs map[string]string
	// dynamicNoted holds the mcpepoch paths noted as dynamically linked.
	dynamicNoted map[string]bool
}

func (c *check) problem(where, what, fix string) {
	c.r.Problems = append(c.r.Problems, Problem{Where: where, What: what, Fix: fix})
}

func (c *check) note(format string, args ...any) {
	c.r.Notes = append(c.r.Notes, fmt.Sprintf(format, args...))
}

// Check checks the project at root (absolute, symlinks resolved). The
// error is for a project whose build files or mcpepoch.toml cannot be read
// at all; everything else is in the Report.
func Check(root string, o Options) (*Report, error) {
	p, err := project.Read(root)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(root)
	if err != nil {
		return nil, err
	}
	c := &check{root: root, p: p, cfg: cfg, pl: p.Plan(), r: &Report{}}
	if len(cfg.Command) > 0 {
		c.pl.Command = cfg.Command
	}
	if !p.Config {
		c.problem(config.FileName, "missing: hook and host guess the launch command", "run "+selfcmd.Name()+" init, or write label and command in "+config.FileName)
	}
	c.hook()
	c.hookCommand(o)
	c.sources()
	c.ownDirs()
	c.clients(o.UserConfigDir)
	c.output()
	c.launch()
	c.codeOutside()
	c.tsc()
	c.state()
	c.writesSinceBuild()
	c.credentials()
	return c.r, nil
}

// codeOutside notes the code trees mcpepoch.toml names outside the
// project (config.CodeOutside; one that contains the project, or the home
// directory, does not load at all).
func (c *check) codeOutside() {
	for _, t := range config.CodeOutside(c.root, c.cfg.Code) {
		c.note("code %s lies outside the project: every build walks it and a change there restarts the server (right for code the server loads from beside the project, such as a monorepo's shared package)", t)
	}
}

// rel returns path relative to the root when inside it.
func (c *check) rel(path string) string {
	if r, err := filepath.Rel(c.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
