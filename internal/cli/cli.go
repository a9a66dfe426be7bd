// Package cli holds the parts of the mcpepoch command that the build hook
// runs on every build, record and version, with what every command shares:
// the exit statuses and the one place that maps an error to one
// ([Report]), flags spelled as the README spells them, and colour.
//
// It imports nothing that costs a build hook's start (go-task's Taskfile
// reader, YAML, WebAuthn, JSON Schema, ssh, net/http): record pays for no
// package initialisation it does not use (cmd/mcpepoch's init test).
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/termsafe"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// Stdio is where a command reads and writes. Status lines and errors go to
// Err; Out carries only machine output (--json, MCP messages for host).
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Exit statuses, documented in the README and the core's command doc.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitNoHost    = 3
	ExitHostError = 4
	// ExitAuditBroken: mcpepoch audit verify found the chain broken.
	ExitAuditBroken = 5
	// ExitStarting: mcpepoch status found a host whose server has not
	// answered initialize yet (state starting), and none in error.
	ExitStarting = 6
)

// ExitError carries an exit status and hint lines for [Report].
type ExitError struct {
	Code  int
	Err   error
	Hints []string
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the status the command ends with.
func (e *ExitError) ExitCode() int { return e.Code }

// HintLines are the "mcpepoch: hint: …" lines Report prints after the error.
func (e *ExitError) HintLines() []string { return e.Hints }

// SilentExit ends the command with a status and no further message: what
// there was to say has been printed.
type SilentExit int

func (e SilentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// ExitCode is the status the command ends with.
func (e SilentExit) ExitCode() int { return int(e) }

// UsageError is bad input on the command line: exit 2.
func UsageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Report prints err the way every mcpepoch command does and returns the
// exit status: "mcpepoch: error: …" lines on w, each line of the error
// escaped for a terminal (an error can quote a host or a server), then one
// "mcpepoch: hint: …" line per hint of an error that has a
// HintLines() []string method. The status is that of an error with an
// ExitCode() int method (a SilentExit prints nothing), else 2 for bad input
// (a *build.InputError, *manifest.CorruptError or *config.Error), else 1;
// 0 for nil and for flag.ErrHelp (-h asked for help).
func Report(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var se SilentExit
	if errors.As(err, &se) {
		return int(se)
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "mcpepoch: error: %s\n", termsafe.EscapeText(line))
	}
	if h, ok := errors.AsType[interface {
		error
		HintLines() []string
	}](err); ok {
		for _, l := range h.HintLines() {
			fmt.Fprintf(w, "mcpepoch: hint: %s\n", termsafe.EscapeText(l))
		}
	}
	if c, ok := errors.AsType[interface {
		error
		ExitCode() int
	}](err); ok {
		return c.ExitCode()
	}
	var ie *build.InputError
	var ce *manifest.CorruptError
	var cfg *config.Error
	if errors.As(err, &ie) || errors.As(err, &ce) || errors.As(err, &cfg) {
		return ExitUsage
	}
	return ExitFailure
}

// WriteJSON writes v as indented JSON: what every --json flag prints.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printable escapes a string that a server, a host or a file wrote before
// it is printed for a person; see termsafe.Escape.
func printable(s string) string { return termsafe.Escape(s) }

// printableText escapes text of our own making that quotes names with %q
// already, such as error messages; see termsafe.EscapeText.
func printableText(s string) string { return termsafe.EscapeText(s) }
