package build

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// scriptCalls adds to id.Scripted every simple command the shell text
// runs, parsed with mvdan.cc/sh: each command of a list, a pipeline, a
// condition, a loop, a function body or a subshell ("tsc && node --watch
// dist/server.js" gives both), whether or not the launch could be
// followed through it. A word that is not a plain literal is kept as the
// shell source that computes it ("$ENTRY"). It goes on into what those
// commands run, as far as it can be read without running anything: a
// shell given a script or -c line, a script run by its path whose #! line
// names a shell, a package.json script run by a package manager (with its
// pre and post scripts), at most maxWrapperDepth deep. seen holds the
// script files read already. A text that does not parse adds nothing.
func scriptCalls(text, dir string, depth int, seen map[string]bool, id *Identity) {
	if depth > maxWrapperDepth {
		return
	}
	f, err := syntax.NewParser().Parse(strings.NewReader(text), "")
	if err != nil {
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		words := make([]string, 0, len(call.Args))
		for _, w := range call.Args {
			lit, ok := literal(w)
			if !ok {
				var b bytes.Buffer
				_ = syntax.NewPrinter().Print(&b, w)
				lit = b.String()
			}
			words = append(words, lit)
		}
		if !slices.ContainsFunc(id.Scripted, func(o []string) bool { return slices.Equal(o, words) }) {
			id.Scripted = append(id.Scripted, words)
		}
		scriptCallsOf(words, dir, depth+1, seen, id)
		return true
	})
}

// scriptCallsOf goes on, for scriptCalls, into the script or package.json
// script the command words runs, if any.
func scriptCallsOf(words []string, dir string, depth int, seen map[string]bool, id *Identity) {
	words = plainCommand(words)
	for len(words) > 1 && filepath.Base(words[0]) == "env" {
		words = plainCommand(words[1:])
	}
	if len(words) == 0 {
		return
	}
	name := filepath.Base(words[0])
	switch {
	case slices.Contains(shells, name) && len(words) > 2 && words[1] == "-c":
		scriptCalls(words[2], dir, depth, seen, id)
	case slices.Contains(shells, name) && len(words) > 1 && !strings.HasPrefix(words[1], "-"):
		scriptFileCalls(abs(dir, words[1]), dir, depth, seen, id)
	case strings.Contains(words[0], "/"):
		p := abs(dir, words[0])
		if interp, iargs, ok := shebang(p); ok && isShellInterp(interp, iargs) {
			scriptFileCalls(p, dir, depth, seen, id)
		}
	default:
		if script, ok := packageScript(name, words[1:]); ok {
			for _, s := range []string{"pre" + script, script, "post" + script} {
				key := "package.json scripts." + s
				if text, found := scriptText(dir, s); found && !seen[key] {
					seen[key] = true
					scriptCalls(text, dir, depth, seen, id)
				}
			}
		}
	}
}

// scriptFileCalls is scriptCalls of the shell script at p (absolute), read
// once per seen.
func scriptFileCalls(p, dir string, depth int, seen map[string]bool, id *Identity) {
	if seen[p] || !isRegular(p) {
		return
	}
	seen[p] = true
	b, err := safefile.ReadFile(p, 1<<20)
	if err != nil {
		return
	}
	scriptCalls(string(b), dir, depth, seen, id)
}

// isShellInterp reports whether a #! line's interpreter (and its
// arguments, for env) names a shell.
func isShellInterp(interp string, iargs []string) bool {
	if filepath.Base(interp) != "env" {
		return slices.Contains(shells, filepath.Base(interp))
	}
	for _, a := range iargs {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			return slices.Contains(shells, filepath.Base(a))
		}
	}
	return false
}
