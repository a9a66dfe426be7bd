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

// launcherConfigFiles are the configuration files each package manager
// that runs a package.json script (packageScript) reads from the project,
// which change what the script runs: the shell it runs the line with,
// NODE_OPTIONS it sets, the node it puts first on PATH. Beside each
// launcher's lockfile (LockfileNames, project.LockfileNames):
//
//   - npm: .npmrc, its per-project config file (npmrc(5): "per-project
//     config file (/path/to/my/project/.npmrc)"), whose node-options npm
//     puts in NODE_OPTIONS and whose script-shell runs the script
//     (npm help config);
//   - pnpm: .npmrc, and pnpm-workspace.yaml, where pnpm 10 and later read
//     every setting but auth and registries from
//     (https://pnpm.io/settings: node-options, script-shell);
//   - yarn: .yarnrc.yml (yarn 2 and later, https://yarnpkg.com/configuration/yarnrc),
//     .yarnrc and .npmrc (yarn 1, https://classic.yarnpkg.com/en/docs/yarnrc:
//     merged up the file tree);
//   - bun: bunfig.toml (https://bun.sh/docs/runtime/bunfig), whose
//     preload runs before the script's entry.
//
// Files in the user's home or the system's (~/.npmrc, $PREFIX/etc/npmrc)
// count only when they lie in a directory above the project
// (launcherConfig).
var launcherConfigFiles = map[string][]string{
	"npm":  {".npmrc"},
	"pnpm": {".npmrc", "pnpm-workspace.yaml"},
	"yarn": {".yarnrc.yml", ".yarnrc", ".npmrc"},
	"bun":  {"bunfig.toml"},
}

// launcherConfig notes (Identity.addConfig) the configuration files of
// the package manager name (launcherConfigFiles) that run a package.json
// script in dir: in dir, present or missing (one created later changes
// what runs, so it changes the identity); in each directory above dir up
// to the file system's root, those present (yarn reads them all, npm a
// workspace's root, and ~/.npmrc is one when the project lies in your
// home).
func launcherConfig(name, dir string, id *Identity) {
	for _, f := range launcherConfigFiles[name] {
		why := f + ": the configuration " + name + " reads before it runs a package.json script (the shell, NODE_OPTIONS, PATH it runs it with)"
		id.addConfig(filepath.Join(dir, f), why, true)
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			if p := filepath.Join(d, f); isRegular(p) {
				id.addConfig(p, why+", from a directory above the project", false)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
}
