package project

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// GoBuild is a `go build` command the project's build task or target
// already runs, and the binary it writes.
type GoBuild struct {
	// Output is the file the command writes, relative to the root and
	// slash-separated: its -o operand (joined to -C, with the package's
	// name appended when it names a directory), else the package's name in
	// the directory the command runs in, as cmd/go names it.
	Output string
	// Cmd is the shell command holding it, as the build file writes it,
	// variables of the Makefile or Taskfile substituted.
	Cmd string
	// Where says what runs it: "the task build of Taskfile.yml", "the
	// target build of Makefile".
	Where string
}

// BuildCommands returns the commands the build file's task or target
// named target runs, the hook left out, with where they come from; nil
// when runner ("task" or "make") has no such task or target.
func (p *Project) BuildCommands(runner, target string) (cmds []string, where string) {
	switch {
	case runner == "task" && p.Taskfile != nil && p.Taskfile.Task(target) != nil:
		for _, c := range p.Taskfile.Task(target).Cmds {
			if !c.Defer && c.Cmd != "" && !isHookCmd(c.Cmd) {
				cmds = append(cmds, p.Taskfile.expand(c.Cmd))
			}
		}
		return cmds, "the task " + target + " of " + p.Taskfile.Path
	case runner == "make" && p.Makefile != nil && p.Makefile.Target(target) != nil:
		for _, l := range p.Makefile.Target(target).Recipe {
			l = strings.TrimLeft(strings.TrimSpace(l), "@-+")
			l = strings.TrimSpace(strings.TrimSuffix(l, "; $(MCPEPOCH_RECORD)"))
			if l != "" && !isHookCmd(l) && !strings.Contains(l, "MCPEPOCH_RECORD") {
				cmds = append(cmds, p.Makefile.expand(l))
			}
		}
		return cmds, "the target " + target + " of " + p.Makefile.Path
	}
	return nil, ""
}

func isHookCmd(s string) bool {
	return strings.Contains(s, "mcpepoch") && strings.Contains(s, " record")
}

// FindGoBuild returns the first `go build` of the build task or target
// whose output can be told without running anything, or nil. A build whose
// -o is computed at run time ($(shell …), a Taskfile sh: var) is not one:
// the caller falls back to the task's generates, then to a guess.
func (p *Project) FindGoBuild(runner, target string) *GoBuild {
	cmds, where := p.BuildCommands(runner, target)
	for _, c := range cmds {
		if out, ok := goBuildOutput(c, p.GoMod); ok {
			return &GoBuild{Output: out, Cmd: c, Where: where}
		}
	}
	return nil
}

// makeVar and taskVar are built on first use: package initialisation
// stays free of allocations (cmd/mcpepoch's start-up test).
var makeVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`) })

// expand substitutes $(NAME) and ${NAME} of variables the Makefile assigns
// (not +=), in their values too; other references stay as written.
func (m *Makefile) expand(s string) string {
	re := makeVar()
	for range 5 { // a variable's value may name others; a loop ends here
		next := re.ReplaceAllStringFunc(s, func(ref string) string {
			a := m.Var(re.FindStringSubmatch(ref)[1])
			if a == nil || a.Op == "+=" {
				return ref
			}
			return a.Value
		})
		if next == s {
			break
		}
		s = next
	}
	return s
}

var taskVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`) })

// expand substitutes {{.NAME}} of the Taskfile's top-level vars that are
// plain strings; other templates stay as written.
func (tf *Taskfile) expand(s string) string {
	if tf.AST == nil || tf.AST.Vars == nil {
		return s
	}
	re := taskVar()
	return re.ReplaceAllStringFunc(s, func(ref string) string {
		v, ok := tf.AST.Vars.Get(re.FindStringSubmatch(ref)[1])
		str, isStr := v.Value.(string)
		if !ok || !isStr || v.Sh != nil || strings.Contains(str, "{{") {
			return ref
		}
		return str
	})
}

// goFlagWithValue reports whether the go build flag name takes the next
// word as its value when written without "=" (cmd/go's build flags,
// go1.26).
func goFlagWithValue(name string) bool {
	switch name {
	case "C", "o", "p", "asmflags", "buildmode", "compiler", "gccgoflags", "gcflags", "installsuffix", "ldflags",
		"mod", "modfile", "overlay", "pgo", "pkgdir", "tags", "toolexec", "coverpkg", "covermode", "exec":
		return true
	}
	return false
}

// goBuildOutput finds a `go build` call in the shell command cmd and
// returns the file it writes, relative to the directory the command starts
// in.
func goBuildOutput(cmd string, g *GoMod) (out string, ok bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return "", false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, isCall := n.(*syntax.CallExpr)
		if ok || !isCall || len(ce.Args) < 2 || ce.Args[0].Lit() != "go" || ce.Args[1].Lit() != "build" {
			return !ok
		}
		out, ok = goBuildCall(ce.Args, g)
		return false
	})
	return out, ok
}

// goBuildCall reads a go build call's flags and packages.
func goBuildCall(args []*syntax.Word, g *GoMod) (out string, ok bool) {
	var words []string
	for _, a := range args {
		w, lit := literal(a)
		if !lit {
			w = "\x00"
		}
		words = append(words, w)
	}
	var dir, pkg string
	outSet := false
	for i := 2; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			if pkg == "" {
				pkg = w
			}
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !hasVal && goFlagWithValue(name) && i+1 < len(words) {
			i++
			val = words[i]
		}
		switch name {
		case "o":
			out, outSet = val, true
		case "C":
			dir = val
		}
	}
	if strings.Contains(out+dir+pkg, "\x00") {
		return "", false // a word computed at run time
	}
	name := goBinaryName(pkg, g)
	switch {
	case !outSet && name == "":
		return "", false
	case !outSet:
		out = name
	case strings.HasSuffix(out, "/"):
		if name == "" {
			return "", false
		}
		out = path.Join(out, name)
	}
	if path.IsAbs(out) {
		return "", false // outside the project: not something init can launch by a relative path
	}
	return path.Clean(path.Join(dir, out)), true
}

// goBinaryName is the file go build writes for the package pattern pkg
// ("" for the current directory) without -o: the last element of its
// import path, the one before a major version suffix (cmd/go's
// DefaultExecName), or the first file's name for a list of .go files.
func goBinaryName(pkg string, g *GoMod) string {
	if strings.HasSuffix(pkg, ".go") {
		return strings.TrimSuffix(path.Base(pkg), ".go")
	}
	if strings.Contains(pkg, "...") {
		return ""
	}
	p := path.Clean(pkg)
	if p == "." || p == "" {
		if g == nil {
			return ""
		}
		p = g.Module
	}
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" && path.Dir(p) != "." {
		base = path.Base(path.Dir(p))
	}
	return base
}

// literal returns the word's value when it has no expansion: plain text,
// single quotes, and double quotes holding plain text.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
