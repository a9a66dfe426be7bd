package project

import (
	"bufio"
	"bytes"
	"strings"
)

// MakefileNames are the names GNU make looks for, in its order.
var MakefileNames = []string{"GNUmakefile", "makefile", "Makefile"}

// Makefile is what a line scan of the root Makefile finds. It does not
// expand variables or follow includes: it is for naming targets and
// checking recipes, not for running them.
type Makefile struct {
	Path     string    // relative to the project root
	Targets  []*Target // explicit targets, in file order (no pattern rules, no .SPECIAL)
	Includes []string  // operands of include / -include lines, as written
	// IncludeLines are the 1-based lines of Includes, one per operand.
	IncludeLines []int
	// Vars are the variable assignments outside recipes, in file order.
	Vars []Assignment
	Src  []byte // the file's content as read
}

// Assignment is one variable assignment line: NAME OP VALUE, with an
// optional override or export in front.
type Assignment struct {
	Name  string
	Op    string // "=", ":=", "::=", "?=" or "+="
	Value string // as written, spaces around it trimmed, not expanded
	Line  int    // 1-based
}

// Var returns the first assignment of name, or nil.
func (m *Makefile) Var(name string) *Assignment {
	for i := range m.Vars {
		if m.Vars[i].Name == name {
			return &m.Vars[i]
		}
	}
	return nil
}

// Target is one explicit rule.
type Target struct {
	Name   string
	Line   int      // 1-based line of the rule
	Recipe []string // recipe lines without the leading tab, continuations joined
	// RecipeEnd is the 1-based physical line of the last recipe line (the
	// last line of its continuations), or Line when it has none.
	RecipeEnd int
	// Prereqs are the prerequisites of every rule line of the target, as
	// written (not expanded), order-only ones included.
	Prereqs []string
}

// Target returns the target called name, or nil.
func (m *Makefile) Target(name string) *Target {
	for _, t := range m.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (p *Project) readMakefile() error {
	rel := p.firstExisting(MakefileNames...)
	if rel == "" {
		return nil
	}
	b, err := p.readFile(rel)
	if err != nil {
		return err
	}
	p.Makefile = parseMakefile(rel, b)
	return nil
}

func parseMakefile(rel string, b []byte) *Makefile {
	m := &Makefile{Path: rel, Src: b}
	var cur *Target
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxFile)
	n := 0
	var cont string
	for sc.Scan() {
		n++
		line := sc.Text()
		if cont != "" {
			line = cont + line
			cont = ""
		}
		if strings.HasSuffix(line, "\\") {
			cont = strings.TrimSuffix(line, "\\") + " "
			continue
		}
		if strings.HasPrefix(line, "\t") {
			if cur != nil {
				cur.Recipe = append(cur.Recipe, strings.TrimPrefix(line, "\t"))
				cur.RecipeEnd = n
			}
			continue
		}
		cur = nil
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if inc, ok := strings.CutPrefix(strings.TrimPrefix(trimmed, "-"), "include "); ok {
			for _, f := range strings.Fields(inc) {
				m.Includes = append(m.Includes, f)
				m.IncludeLines = append(m.IncludeLines, n)
			}
			continue
		}
		if a, ok := assignment(trimmed, n); ok {
			m.Vars = append(m.Vars, a)
			continue
		}
		cur = m.rule(trimmed, n)
	}
	return m
}

// rule records the explicit targets of a rule line and returns the last
// one, which takes the recipe lines that follow; nil for anything else.
func (m *Makefile) rule(line string, n int) *Target {
	i := strings.IndexByte(line, ':')
	if i <= 0 || strings.ContainsAny(line[:i], "=%") || strings.HasPrefix(line[i:], ":=") || strings.HasPrefix(line[i:], "::=") {
		return nil
	}
	names := line[:i]
	if strings.Contains(names, "$") {
		// $(BIN): … names the target by a variable assigned above.
		if names = m.expand(names); strings.Contains(names, "$") {
			return nil
		}
	}
	var last *Target
	for _, name := range strings.Fields(names) {
		if strings.HasPrefix(name, ".") {
			continue
		}
		t := m.Target(name)
		if t == nil {
			t = &Target{Name: name, Line: n, RecipeEnd: n}
			m.Targets = append(m.Targets, t)
		}
		last = t
	}
	if last != nil {
		deps, recipe, ok := strings.Cut(line[i+1:], ";")
		if ok {
			last.Recipe = append(last.Recipe, strings.TrimSpace(recipe))
		}
		deps, _, _ = strings.Cut(deps, "#")
		if strings.Contains(deps, "=") {
			deps = "" // a target-specific variable: build: VAR = value
		}
		for _, d := range makeFields(strings.TrimPrefix(deps, ":")) {
			if d != "|" {
				last.Prereqs = append(last.Prereqs, d)
			}
		}
	}
	return last
}

// assignment parses a variable assignment line (GNU make's =, :=, ::=, ?=
// and +=, after an optional override or export).
func assignment(line string, n int) (Assignment, bool) {
	for _, p := range []string{"override ", "export "} {
		line = strings.TrimSpace(strings.TrimPrefix(line, p))
	}
	i := strings.IndexByte(line, '=')
	if i <= 0 {
		return Assignment{}, false
	}
	name, op := line[:i], "="
	for _, o := range []string{"::", ":", "?", "+"} {
		if n, ok := strings.CutSuffix(name, o); ok {
			name, op = n, o+"="
			break
		}
	}
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, " \t:#$()") {
		return Assignment{}, false
	}
	return Assignment{Name: name, Op: op, Value: strings.TrimSpace(line[i+1:]), Line: n}, true
}
