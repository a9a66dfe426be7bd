package project

import (
	"path"
	"strings"
)

// Sources returns what the make target name is built from, as doublestar
// globs relative to the root: its prerequisites that are files, and those
// of each prerequisite that is a target of the Makefile (followed, not
// listed itself: it is an output), with the Makefile's plain variables
// substituted and $(wildcard GLOB …) read as the GLOBs. Unread holds the
// prerequisites that are computed when make runs ($(shell …), a variable
// that is not a plain value): their files are not among the globs.
func (m *Makefile) Sources(name string) (globs, unread []string) {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(name string) {
		t := m.Target(name)
		if t == nil || seen[name] {
			return
		}
		seen[name] = true
		for _, d := range t.Prereqs {
			for _, w := range m.prereqWords(d) {
				switch {
				case strings.Contains(w, "$"):
					unread = append(unread, w)
				case m.Target(w) != nil:
					walk(w)
				default:
					if g := path.Clean(strings.TrimPrefix(w, "./")); !strings.HasPrefix(g, "../") {
						globs = append(globs, g)
					}
				}
			}
		}
	}
	walk(name)
	return globs, unread
}

// prereqWords expands one prerequisite as written into its words, a
// $(wildcard GLOB …) into its GLOBs.
func (m *Makefile) prereqWords(d string) []string {
	var out []string
	for _, w := range makeFields(m.expand(d)) {
		inner, ok := strings.CutPrefix(w, "$(wildcard ")
		if ok && strings.HasSuffix(inner, ")") && !strings.Contains(inner, "$") {
			out = append(out, strings.Fields(strings.TrimSuffix(inner, ")"))...)
			continue
		}
		out = append(out, w)
	}
	return out
}

// makeFields splits a rule line's prerequisites on blanks, keeping a
// variable reference or function call ($(…), ${…}) in one word.
func makeFields(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			depth++
			cur.WriteString(s[i : i+2])
			i++
			continue
		case depth > 0 && (c == ')' || c == '}'):
			depth--
		case depth == 0 && (c == ' ' || c == '\t'):
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteByte(c)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
