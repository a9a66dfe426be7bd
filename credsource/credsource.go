// Package credsource reads the secret of a credential scope from where
// mcpepoch.toml says it lives ([credentials.NAME] env, file or command),
// and from nowhere else. It decides nothing about who may have it: the
// host asks it only for a call a person approved (package credbroker).
//
// Sources:
//
//   - env = "VAR": a variable of the host's own environment, captured
//     once when the host starts ([New]); [Set.Strip] leaves it out of the
//     environment the server inherits. mcpepoch host takes it out of its
//     own initial environment too (package credenv) and passes its value
//     to New.
//   - file = "PATH": a regular file outside the project, owned by the
//     user, mode 0600 or stricter (no group or other bits), at most
//     MaxSecret bytes; checked every time it is read, after symbolic links
//     are resolved.
//   - command = ["op", "read", "op://…"]: run without a shell, in the
//     project root, stdin empty, stderr discarded, bounded by the caller's
//     context (DefaultCommandTimeout when it has no deadline); its
//     standard output, at most MaxSecret bytes, is the secret.
//
// Every value is trimmed of leading and trailing white space; an empty one
// is an error. No error of this package holds a value: an *Error names the
// scope, the source and what failed.
package credsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
)

// MaxSecret is the largest secret read from a file or a command's output,
// in bytes.
const MaxSecret = 64 << 10

// Kind is where a secret comes from.
type Kind string

// Kinds of source.
const (
	KindNone    Kind = ""        // the scope names no source: nothing to hand over
	KindEnv     Kind = "env"     // a variable of the host's environment
	KindFile    Kind = "file"    // a file outside the project
	KindCommand Kind = "command" // a command's standard output
)

// Source is where one scope's secret is.
type Source struct {
	Scope   string
	Kind    Kind
	Env     string   // KindEnv: the variable
	File    string   // KindFile: absolute, "~/" expanded
	Command []string // KindCommand: program and arguments
	// Dir is the project root: the command's working directory, and what
	// a file source must lie outside of.
	Dir string

	value    string // KindEnv: the value captured by New
	captured bool   // KindEnv: the variable was set when New ran

	start func(*exec.Cmd) error // KindCommand: see Set.SetStarter
	done  func(pid int)
}

// Error is a secret that could not be read. It never holds the value.
type Error struct {
	Scope  string // the credential scope
	Source string // the source, as Describe says it
	Err    error  // what failed
}

// Error returns "credential SCOPE (SOURCE): ERR".
func (e *Error) Error() string {
	return fmt.Sprintf("credential %s (%s): %v", e.Scope, e.Source, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoSource is the Err of an *Error for a scope that names no source.
var ErrNoSource = errors.New("no source: set env, file or command under [credentials.NAME] in mcpepoch.toml")

// Set is the sources of one project's scopes.
type Set struct {
	sources map[string]*Source
}

// New returns the sources of creds (as config.Load validated them) for the
// project at root, capturing the value of every env source from environ
// (os.Environ's form). A file path that cannot be expanded is an *Error
// here; everything else is checked when read.
func New(root string, creds map[string]config.Credential, environ []string) (*Set, error) {
	s := &Set{sources: map[string]*Source{}}
	for name, c := range creds {
		src := &Source{Scope: name, Dir: root}
		switch {
		case c.Env != "":
			src.Kind, src.Env = KindEnv, c.Env
			src.value, src.captured = lookup(environ, c.Env)
		case c.File != "":
			f, err := c.FilePath()
			if err != nil {
				return nil, &Error{Scope: name, Source: "file " + c.File, Err: err}
			}
			src.Kind, src.File = KindFile, f
		case len(c.Command) > 0:
			src.Kind, src.Command = KindCommand, slices.Clone(c.Command)
		}
		s.sources[name] = src
	}
	return s, nil
}

// lookup returns the last value of name in environ, as the C library does.
func lookup(environ []string, name string) (string, bool) {
	val, ok := "", false
	for _, kv := range environ {
		if k, v, found := strings.Cut(kv, "="); found && k == name {
			val, ok = v, true
		}
	}
	return val, ok
}

// SetStarter sets how command sources are started: start starts the
// process (instead of (*exec.Cmd).Start) and done is told its pid once it
// has been waited for. A process that reaps children it does not know (a
// child subreaper) registers the command with them, so that it neither
// takes the command's exit status nor kills it as an orphan. Call it
// before any Read.
func (s *Set) SetStarter(start func(*exec.Cmd) error, done func(pid int)) {
	for _, src := range s.sources {
		src.start, src.done = start, done
	}
}

// Source returns the source of scope, or nil for a scope mcpepoch.toml
// does not declare.
func (s *Set) Source(scope string) *Source { return s.sources[scope] }

// Scopes returns the declared scopes, sorted.
func (s *Set) Scopes() []string {
	out := make([]string, 0, len(s.sources))
	for k := range s.sources {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Strip returns environ without the variables of env sources: what the
// server may inherit.
func (s *Set) Strip(environ []string) []string {
	drop := map[string]bool{}
	for _, src := range s.sources {
		if src.Kind == KindEnv {
			drop[src.Env] = true
		}
	}
	if len(drop) == 0 {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}

// Describe says where the secret is, without it: "env INVENTORY_TOKEN",
// "file /home/me/.config/inv/token", "command op read op://…", "no source".
func (src *Source) Describe() string {
	switch src.Kind {
	case KindEnv:
		return "env " + src.Env
	case KindFile:
		return "file " + src.File
	case KindCommand:
		return "command " + strings.Join(src.Command, " ")
	}
	return "no source"
}

// Cacheable reports whether the secret may be kept in memory between
// reads: only a command's output, which is expensive to get again (a
// vault may ask the person to unlock it). Files are read each time, so a
// rotated or removed file takes effect at once.
func (src *Source) Cacheable() bool { return src.Kind == KindCommand }

// Read returns the secret. Errors are *Error and never hold the value.
func (src *Source) Read(ctx context.Context) (string, error) {
	var (
		v   string
		err error
	)
	switch src.Kind {
	case KindEnv:
		if !src.captured {
			err = errors.New("the variable was not set when the host started")
		}
		v = src.value
	case KindFile:
		v, err = readFile(src.Dir, src.File)
	case KindCommand:
		v, err = runCommand(ctx, src.Dir, src.Command, src.start, src.done)
	default:
		err = ErrNoSource
	}
	if err == nil {
		v = strings.TrimSpace(v)
		if v == "" {
			err = errors.New("the secret is empty")
		}
	}
	if err != nil {
		return "", &Error{Scope: src.Scope, Source: src.Describe(), Err: err}
	}
	return v, nil
}

// Check reports, without reading the secret or running anything, why Read
// would fail where that can be told in advance: an env variable that was
// not set, a file that is missing, inside the project, not the user's or
// readable by others, a command whose program is not found. nil means
// Read may succeed. For doctor and the host's start-up warnings.
func (src *Source) Check() error {
	var err error
	switch src.Kind {
	case KindEnv:
		if !src.captured {
			err = errors.New("the variable is not set")
		}
	case KindFile:
		_, err = checkFile(src.Dir, src.File)
	case KindCommand:
		_, err = lookPath(src.Dir, src.Command[0])
	default:
		err = ErrNoSource
	}
	if err != nil {
		return &Error{Scope: src.Scope, Source: src.Describe(), Err: err}
	}
	return nil
}

// realDir returns dir with symbolic links resolved, or dir as given when
// that fails.
func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// isNotExist reports a missing file, for messages.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
