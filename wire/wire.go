// Package wire works out what `mcpepoch init` writes to wire a server
// project to mcpepoch: mcpepoch.toml, the build hook (a defer in the
// Taskfile's build task, or the recipe line of the Makefile's build
// target), a dev task or target running `mcpepoch dev`, the client
// configurations that launch `mcpepoch host` by absolute path, and
// .gitignore. It only computes: every change is returned with the content
// it replaces, for the caller to show as a diff and write.
//
// Files are edited as text at the positions the parsers report (the YAML
// nodes of the Taskfile, the Makefile's rule lines), so comments, order
// and formatting survive; JSON files are merged key by key. Wiring an
// already wired project yields no change.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/templates"
)

// The hook files init writes beside the build file, from the templates.
const (
	MCPEPOCHTaskfile = "mcpepoch.Taskfile.yml"
	MCPEPOCHMk       = "mcpepoch.mk"
)

// Options say how to wire.
type Options struct {
	// Hook is how the build files call mcpepoch: "mcpepoch" (on PATH), a
	// path relative to the root (node_modules/.bin/mcpepoch) or absolute.
	// It becomes the MCPEPOCH variable of the Taskfile or Makefile.
	Hook string
	// Mcpepoch is the absolute path the client configs launch.
	Mcpepoch string
	// Clients are the client configs to write (DefaultClients when nil).
	Clients []Client
	// Runner is the build tool to wire when the project has neither a
	// Taskfile nor a Makefile: "task" (the default) or "make".
	Runner string
	// Command and Label override the plan's guesses.
	Command []string
	Label   string
	// UserConfigDir is where per-user client configs are (os.UserConfigDir).
	UserConfigDir string
}

// Change is one file init writes.
type Change struct {
	Path string // absolute
	Rel  string // as shown: relative to the root when inside it
	Old  []byte // the current content; nil when the file does not exist
	New  []byte
	// Backup: Old is kept beside the file before it is replaced (merged
	// JSON, where a comment or odd formatting could be lost).
	Backup bool
}

// Wiring is what wiring a project takes.
type Wiring struct {
	Plan    project.Plan
	Changes []Change // only files whose content changes, in the order shown
	Notes   []string // what the user should know: guesses made, edits left to them
	Servers map[Client]string
}

// Wire works out the changes that wire p. It returns an error, naming the
// file, for a build file or client config it cannot edit safely.
func Wire(p *project.Project, o Options) (*Wiring, error) {
	pl := p.Plan()
	cfg, err := config.Load(p.Root)
	if err != nil {
		return nil, err
	}
	switch {
	case len(o.Command) > 0:
		overrideCommand(&pl, o.Command)
	case len(cfg.Command) > 0:
		pl.Command = cfg.Command
	}
	switch {
	case o.Label != "":
		pl.Label = o.Label
	case cfg.Label != "":
		pl.Label = cfg.Label
	}
	if len(pl.Command) == 0 {
		return nil, errors.New("cannot tell how the server is launched (no package.json, go.mod with a package main, or pyproject.toml with scripts): pass --command 'CMD ARGS'")
	}
	if o.Hook == "" {
		o.Hook = "mcpepoch"
	}
	w := &Wiring{Plan: pl, Servers: map[Client]string{}}
	add := func(rel string, build func(old []byte) ([]byte, error)) error {
		path := rel
		if !filepath.IsAbs(rel) {
			path = filepath.Join(p.Root, rel)
		}
		old, err := readOld(path)
		if err != nil {
			return err
		}
		b, err := build(old)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if old == nil || !bytes.Equal(old, b) {
			w.Changes = append(w.Changes, Change{Path: path, Rel: rel, Old: old, New: b, Backup: old != nil && strings.HasSuffix(rel, ".json")})
		}
		return nil
	}
	if err := add(config.FileName, func(old []byte) ([]byte, error) {
		if len(o.Command) > 0 && len(cfg.Command) > 0 && !slices.Equal(o.Command, cfg.Command) {
			return replaceCommand(old, pl.Command)
		}
		return editConfig(old, cfg, pl), nil
	}); err != nil {
		return nil, err
	}
	if err := w.wireBuild(p, &pl, o, add); err != nil {
		return nil, err
	}
	w.Plan = pl
	clients := o.Clients
	if clients == nil {
		clients = DefaultClients
	}
	for _, c := range clients {
		err := add(c.ConfigPath(o.UserConfigDir), func(old []byte) ([]byte, error) {
			b, name, err := mergeClient(c, old, pl.Label, p.Root, o.Mcpepoch, pl.Command)
			w.Servers[c] = name
			return b, err
		})
		if err != nil {
			return nil, err
		}
	}
	if p.TSConfig != nil && slices.ContainsFunc(pl.Build.Command, func(s string) bool { return strings.Contains(s, "tsc") || s == "build" }) {
		if err := add("tsconfig.json", func(old []byte) ([]byte, error) { return editTSConfig(old, p.TSConfig), nil }); err != nil {
			return nil, err
		}
	}
	if err := add(".gitignore", func(old []byte) ([]byte, error) { return editGitignore(old), nil }); err != nil {
		return nil, err
	}
	return w, nil
}

// wireBuild adds the changes to the build files: the Taskfile's, else the
// Makefile's, else a new one of o.Runner's kind.
func (w *Wiring) wireBuild(p *project.Project, pl *project.Plan, o Options, add func(string, func([]byte) ([]byte, error)) error) error {
	keep := func(name string) error {
		return add(name, func(old []byte) ([]byte, error) {
			if old != nil {
				return old, nil // edited by hand perhaps: left as it is
			}
			return templates.Get(name)
		})
	}
	useMake := p.Taskfile == nil && (p.Makefile != nil || o.Runner == "make")
	if useMake {
		if p.Makefile == nil {
			p.Makefile = &project.Makefile{Path: "Makefile"}
		}
		if err := keep(MCPEPOCHMk); err != nil {
			return err
		}
		pl.Build.Runner = "make"
		return add(p.Makefile.Path, func([]byte) ([]byte, error) {
			b, notes, err := editMakefile(p, *pl, o)
			w.Notes = append(w.Notes, notes...)
			return b, err
		})
	}
	if p.Taskfile == nil {
		p.Taskfile = seedTaskfile()
	}
	if err := keep(MCPEPOCHTaskfile); err != nil {
		return err
	}
	pl.Build.Runner = "task"
	return add(p.Taskfile.Path, func([]byte) ([]byte, error) {
		b, notes, err := editTaskfile(p, *pl, o)
		w.Notes = append(w.Notes, notes...)
		return b, err
	})
}

// seedTaskfile is the Taskfile a project without one starts from.
func seedTaskfile() *project.Taskfile {
	src := []byte("# Tasks for go-task (https://taskfile.dev): task build, task dev.\nversion: '3'\n\ntasks:\n  default:\n    cmds:\n      - task: build\n")
	tf, err := project.ParseTaskfile("Taskfile.yml", src)
	if err != nil {
		panic(err) // the seed is a constant
	}
	return tf
}

func readOld(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > 4<<20 {
		return nil, fmt.Errorf("%s: larger than 4 MiB", path)
	}
	return safefile.ReadFile(path, 4<<20)
}

// editConfig returns mcpepoch.toml with label and command set: a new file,
// or the lines added at the top of an existing one (before its first table).
func editConfig(old []byte, cfg *config.Config, pl project.Plan) []byte {
	var lines []string
	if cfg.Label == "" {
		lines = append(lines, "label = "+strconv.Quote(pl.Label))
	}
	if len(cfg.Command) == 0 {
		q := make([]string, len(pl.Command))
		for i, w := range pl.Command {
			q[i] = strconv.Quote(w)
		}
		lines = append(lines, "command = ["+strings.Join(q, ", ")+"]")
	}
	if len(cfg.Code) == 0 && len(pl.Code) > 0 {
		q := make([]string, len(pl.Code))
		for i, c := range pl.Code {
			q[i] = strconv.Quote(c)
		}
		lines = append(lines, "code = ["+strings.Join(q, ", ")+"]")
	}
	if old == nil {
		head := []string{"# mcpepoch settings: label and launch command of the server, read by", "# mcpepoch record, host and dev (every key: docs/formats.md in the mcpepoch repository)."}
		return []byte(strings.Join(append(head, lines...), "\n") + "\n")
	}
	if len(lines) == 0 {
		return old
	}
	t := newText(old)
	at := len(t.lines) + 1
	for i, l := range t.lines {
		if strings.HasPrefix(strings.TrimSpace(l), "[") {
			at = i + 1
			break
		}
	}
	t.insert(at, lines...)
	return t.bytes()
}

// editGitignore adds .mcpepoch/ to .gitignore unless a line covers it.
func editGitignore(old []byte) []byte {
	for _, l := range strings.Split(string(old), "\n") {
		if slices.Contains([]string{".mcpepoch", ".mcpepoch/", "/.mcpepoch", "/.mcpepoch/"}, strings.TrimSpace(l)) {
			return old
		}
	}
	b, _ := templates.Get("gitignore")
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	return append(old, b...)
}

// overrideCommand makes command (--command) the plan's launch command.
// The guesses about the entry are dropped unless command runs that entry.
func overrideCommand(pl *project.Plan, command []string) {
	pl.Command = command
	runsEntry := pl.Entry != "" && slices.ContainsFunc(command, func(w string) bool {
		return w == pl.Entry || w == "./"+pl.Entry
	})
	if runsEntry {
		return
	}
	pl.Entry = ""
	kept := pl.Reasons[:0]
	for _, r := range pl.Reasons {
		if !strings.HasPrefix(r, "entry:") && !strings.HasPrefix(r, "binary:") && !strings.HasPrefix(r, "command:") {
			kept = append(kept, r)
		}
	}
	pl.Reasons = append(kept, "command: as --command gives it")
}

// replaceCommand returns mcpepoch.toml with its top-level command line
// replaced by command. A command array that spans several lines is not
// rewritten: the error names the line and what to write there.
func replaceCommand(old []byte, command []string) ([]byte, error) {
	q := make([]string, len(command))
	for i, w := range command {
		q[i] = strconv.Quote(w)
	}
	line := "command = [" + strings.Join(q, ", ") + "]"
	t := newText(old)
	for i, l := range t.lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "[") {
			break
		}
		key, rest, ok := strings.Cut(trimmed, "=")
		if !ok || strings.TrimSpace(key) != "command" {
			continue
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "[") || !strings.Contains(rest, "]") {
			return nil, fmt.Errorf("line %d: command spans several lines and is left as it is: replace it with %s", i+1, line)
		}
		t.replace(i+1, 1, line)
		return t.bytes(), nil
	}
	return nil, fmt.Errorf("command is not a top-level line of its own and is left as it is: write %s before the first table", line)
}
