package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// typeErrorRE matches what the TOML decoder says when a value has the wrong
// type for its key: "toml: line N (last key "K"): incompatible types: TOML
// value has type T; destination has type D", or "… type mismatch for S:
// expected table but found T".
var typeErrorRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (?:incompatible types: TOML value has type (.+); destination has type .+|type mismatch for .+: expected table but found (.+))$`)
}) // compiled on first use

// typeError rewrites the decoder's type error err into an *Error naming the
// file at path, the key and, when known, its line, in this package's words:
// "PATH:2: command: want a list of strings, e.g. ["node", "dist/server.js"];
// got a string". It returns nil for any other error.
func typeError(path string, err error) *Error {
	m := typeErrorRE().FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	key, got := m[2], m[3]
	if got == "" {
		got = m[4]
	}
	line, _ := strconv.Atoi(m[1])
	return &Error{Path: path, Line: line, Key: key, Err: fmt.Errorf("want %s; got %s", wantFor(key), tomlKind(got))}
}

// wantFor describes the value key takes.
func wantFor(key string) string {
	parts := strings.Split(key, ".")
	switch {
	case key == "command":
		return `a list of strings, e.g. ["node", "dist/server.js"]`
	case key == "label", key == "entry", key == "host.restart", key == "host.drain_start":
		return "a string"
	case key == "host.grace", key == "host.first_start_wait", key == "host.drain", key == "host.init_timeout":
		return `a duration as a string, e.g. "5s"`
	case key == "allow_self_reload":
		return "true or false"
	case key == "host", key == "grants", key == "credentials":
		return "a table ([" + key + "])"
	case len(parts) == 2 && parts[0] == "credentials":
		return "a table ([" + key + "])"
	case len(parts) == 3 && parts[0] == "credentials" && parts[2] == "per_call":
		return "true or false"
	case len(parts) == 3 && parts[0] == "credentials" && slices.Contains([]string{"env", "file", "deliver", "as"}, parts[2]):
		return "a string"
	case len(parts) == 3 && parts[0] == "credentials" && parts[2] == "command":
		return `a list of strings, e.g. ["pass", "show", "inventory/token"]`
	}
	return `a list of strings, e.g. ["a", "b"]`
}

// tomlKind names the decoder's Go type for a TOML value in TOML's terms.
func tomlKind(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "int"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "a boolean"
	case goType == "time.Time" || strings.HasPrefix(goType, "toml.Local"):
		return "a date or time"
	case strings.HasPrefix(goType, "[]map"):
		return "an array of tables"
	case strings.HasPrefix(goType, "["):
		return "an array"
	case strings.HasPrefix(goType, "map"):
		return "a table"
	}
	return goType
}

// syntaxError rewrites the decoder's syntax error pe in src, read from
// path, into an *Error of the same form as a type error:
// "PATH:LINE:COL: KEY: MESSAGE", KEY the last key read before the error
// (left out when there is none), LINE and COL where the decoder stopped.
func syntaxError(path string, src []byte, pe toml.ParseError) *Error {
	e := &Error{Path: path, Line: pe.Position.Line, Key: pe.LastKey,
		Err: errors.New(strings.TrimSuffix(pe.Message, "."))}
	if start := pe.Position.Start; start >= 0 && start <= len(src) {
		before := src[:start]
		e.Line = bytes.Count(before, []byte("\n")) + 1
		e.Col = start - (bytes.LastIndexByte(before, '\n') + 1) + 1
	}
	return e
}
