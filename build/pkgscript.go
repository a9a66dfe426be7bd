package build

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// packageScript returns the name of the package.json script a package
// manager's command line runs: "npm start" (start, stop, test, restart),
// "npm run X" and "npm run-script X", "yarn X" and "yarn run X",
// "pnpm X" and "pnpm run X", "bun run X". ok is false when name is no
// such package manager or its arguments name no script; the launch is
// then read as any other program (a node script outside the project,
// which a launch is refused for: Uncovered).
func packageScript(name string, args []string) (script string, ok bool) {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return "", false
	}
	switch name {
	case "npm":
		switch words[0] {
		case "start", "stop", "test", "restart":
			return words[0], true
		case "run", "run-script", "rum", "urn":
			if len(words) > 1 {
				return words[1], true
			}
		}
	case "yarn", "pnpm":
		if words[0] == "run" {
			if len(words) > 1 {
				return words[1], true
			}
			return "", false
		}
		return words[0], true
	case "bun":
		if words[0] == "run" && len(words) > 1 {
			return words[1], true
		}
	}
	return "", false
}

// scriptText returns the command of script in dir's package.json
// (scripts.NAME), and npm's default for start ("node server.js", npm help
// start) when package.json has none and server.js exists.
func scriptText(dir, script string) (string, bool) {
	b, err := safefile.ReadFile(filepath.Join(dir, "package.json"), 1<<20)
	if err != nil {
		return "", false
	}
	var pj struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pj) != nil {
		return "", false
	}
	if s, ok := pj.Scripts[script]; ok {
		return s, true
	}
	if script == "start" && isRegular(filepath.Join(dir, "server.js")) {
		return "node server.js", true
	}
	return "", false
}

// plainShell parses a shell command line (a package.json script, sh -c's
// argument) with mvdan.cc/sh and returns its words when it is one simple
// command of literal words, after NAME=value assignments and an "exec":
// what a shell would run, with nothing it would compute first. It
// reports false for anything else (&&, ;, |, $…, redirections, globs,
// more than one command), since then the words are not all that runs.
func plainShell(s string) ([]string, bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader(s), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return nil, false
	}
	for _, a := range call.Assigns {
		if a.Value != nil {
			if _, ok := literal(a.Value); !ok {
				return nil, false
			}
		}
	}
	var words []string
	for _, w := range call.Args {
		lit, ok := literal(w)
		if !ok {
			return nil, false
		}
		words = append(words, lit)
	}
	if words[0] == "exec" {
		words = words[1:]
	}
	return words, len(words) > 0
}

// literal returns the value of a word made of literals and quotes alone,
// with no expansion; false otherwise.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			// A glob is an expansion; an unmatched "[" (the test
			// command's name) is a literal, as the shell reads it.
			if pattern.HasMeta(p.Value, 0) || strings.ContainsAny(p.Value, "~\\") {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(lit.Value, "\\") {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
