package wire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/project"
)

// MakeHook ends the build recipe's line: the hook runs after the build
// command in the same shell, failed or not, and the line exits with the
// build's status (mcpepoch.mk defines it).
const MakeHook = "$(MCPEPOCH_RECORD)"

// editMakefile returns the Makefile with mcpepoch.mk included, the hook on
// the build recipe's last line (or a new build target), and a dev target.
func editMakefile(p *project.Project, pl project.Plan, o Options) ([]byte, []string, error) {
	mf := p.Makefile
	t := newText(mf.Src)
	var notes []string
	first := len(t.lines) + 1
	if len(mf.Targets) > 0 {
		first = mf.Targets[0].Line
		for first > 1 && blank(t.line(first-1)) && strings.TrimSpace(t.line(first-1)) != "" {
			first-- // the comment lines above the first rule stay with it
		}
	}
	// MCPEPOCH goes before the include: mcpepoch.mk's own ?= would win.
	at := first
	inc := slices.IndexFunc(mf.Includes, func(s string) bool { return strings.Contains(s, "mcpepoch") })
	included := inc >= 0
	if included {
		at = mf.IncludeLines[inc]
	}
	var lines []string
	if o.Hook != "" && o.Hook != "mcpepoch" && mf.Var("MCPEPOCH") == nil {
		lines = append(lines, "MCPEPOCH ?= "+shellJoin([]string{o.Hook}))
	}
	if !included {
		lines = append(lines, "include "+MCPEPOCHMk, "")
	}
	if len(lines) > 0 {
		t.insert(at, lines...)
	}
	build := mf.Target(pl.Build.Target)
	switch {
	case build == nil:
		cmd := "true"
		if pl.Build.Command != nil {
			cmd = shellJoin(pl.Build.Command)
		}
		t.insert(len(t.lines)+1, "", ".PHONY: "+pl.Build.Target, pl.Build.Target+":", "\t"+cmd+"; "+MakeHook)
	case !build.HasHook() && len(build.Recipe) == 0:
		t.insert(build.Line+1, "\ttrue; "+MakeHook)
		notes = append(notes, fmt.Sprintf("%s:%d: the target %s has no recipe: the hook runs after its prerequisites, not when they fail", mf.Path, build.Line, build.Name))
	case !build.HasHook():
		l := t.line(build.RecipeEnd)
		t.replace(build.RecipeEnd, 1, strings.TrimRight(strings.TrimRight(l, " \t"), ";")+"; "+MakeHook)
		if len(build.Recipe) > 1 {
			notes = append(notes, fmt.Sprintf("%s:%d: the hook is on the last of %d recipe lines: a failure of an earlier line skips it; join them with ; to record every build", mf.Path, build.RecipeEnd, len(build.Recipe)))
		}
	}
	switch dev := mf.Target("dev"); {
	case dev == nil:
		t.insert(len(t.lines)+1, "", ".PHONY: dev", "dev:", "\t$(MCPEPOCH) dev")
	case !IsDevTarget(dev):
		if dev.RecipeEnd > dev.Line {
			t.replace(dev.Line+1, dev.RecipeEnd-dev.Line, "\t$(MCPEPOCH) dev")
		} else {
			t.insert(dev.Line+1, "\t$(MCPEPOCH) dev")
		}
		notes = append(notes, fmt.Sprintf("%s:%d: the dev target now runs mcpepoch dev", mf.Path, dev.Line))
	}
	if !t.changed() {
		return mf.Src, nil, nil
	}
	return t.bytes(), notes, nil
}

// IsDevTarget reports whether the target's recipe runs mcpepoch dev.
func IsDevTarget(t *project.Target) bool {
	for _, l := range t.Recipe {
		if (strings.Contains(l, "$(MCPEPOCH)") || strings.Contains(l, "mcpepoch")) && strings.HasSuffix(strings.TrimSpace(l), " dev") {
			return true
		}
	}
	return false
}
