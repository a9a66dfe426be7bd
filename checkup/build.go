package checkup

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/wire"
)

// hook checks that the build runs the hook in a form that survives a
// failed build: a defer in the Taskfile's build task, or the Makefile
// recipe line that keeps the build's status.
func (c *check) hook() {
	target := c.pl.Build.Target
	switch tf, mf := c.p.Taskfile, c.p.Makefile; {
	case tf != nil:
		if _, err := exec.LookPath("task"); err != nil {
			c.note("the build is a go-task Taskfile and the go-task CLI is not on PATH: task build and %s dev cannot run it here (go install github.com/go-task/task/v3/cmd/task@v3.54.0, brew install go-task, or npm i -D @go-task/cli)", selfcmd.Name())
		}
		t := tf.Task(target)
		if t == nil {
			c.problem(tf.Path, "no task "+target+": nothing runs the hook", "run "+selfcmd.Name()+" init, which adds it")
			return
		}
		for _, line := range t.DroppedDefers {
			c.problem(fmt.Sprintf("%s:%d", tf.Path, line), "a cmds entry with cmd: and defer: true: go-task drops the command and defers \"true\"",
				"write it as "+strings.TrimPrefix(wire.HookDefer, "- ")+" ("+selfcmd.Name()+" init does)")
		}
		if tf.HasHook(t) {
			return
		}
		for _, cmd := range t.Cmds {
			if !cmd.Defer && strings.Contains(cmd.Cmd, "mcpepoch") && strings.Contains(cmd.Cmd, "record") {
				c.problem(fmt.Sprintf("%s:%d", tf.Path, cmd.Line), "the hook is a command after the build: a failed build skips it",
					"make it a defer, first in cmds: "+wire.HookDefer)
				return
			}
		}
		if len(t.DroppedDefers) == 0 {
			c.problem(fmt.Sprintf("%s:%d", tf.Path, t.Line), "the task "+target+" does not run the hook: hosts hear of no build",
				"run "+selfcmd.Name()+" init, or add first in its cmds: "+wire.HookDefer)
		}
	case mf != nil:
		t := mf.Target(target)
		if t == nil {
			c.problem(mf.Path, "no target "+target+": nothing runs the hook", "run "+selfcmd.Name()+" init, which adds it")
			return
		}
		c.makeHook(mf, t)
	default:
		c.problem("build", "no Taskfile or Makefile: nothing runs the hook after a build", "run "+selfcmd.Name()+" init")
	}
}

func (c *check) makeHook(mf *project.Makefile, t *project.Target) {
	if !t.HasHook() {
		c.problem(fmt.Sprintf("%s:%d", mf.Path, t.Line), "the target "+t.Name+" does not run the hook: hosts hear of no build",
			"end its build line with ; "+wire.MakeHook+" (and include "+wire.MCPEPOCHMk+"), or run "+selfcmd.Name()+" init")
		return
	}
	for i, line := range t.Recipe {
		if !(strings.Contains(line, "MCPEPOCH_RECORD") || strings.Contains(line, "mcpepoch") && strings.Contains(line, "record")) {
			continue
		}
		hook := 0
		for _, h := range []string{"$(MCPEPOCH_RECORD)", "${MCPEPOCH_RECORD}", "mcpepoch"} {
			if j := strings.Index(line, h); j >= 0 {
				hook = j
				break
			}
		}
		before := strings.TrimLeft(strings.TrimSpace(line[:hook]), "@-+")
		where := fmt.Sprintf("%s:%d", mf.Path, t.Line)
		switch {
		case i > 0 && strings.TrimSpace(before) == "":
			c.problem(where, "the hook is a recipe line of its own after the build: a failed build stops make before it",
				"put it on the build command's line: BUILD-CMD; "+wire.MakeHook)
		case strings.Contains(before, "&&"):
			c.problem(where, "the hook follows the build with &&: a failed build skips it", "use ; instead: BUILD-CMD; "+wire.MakeHook)
		case !strings.Contains(line, "MCPEPOCH_RECORD") && !strings.Contains(line[hook:], "exit"):
			c.problem(where, "the recipe line ends with the hook's exit status, not the build's: make sees a failed build succeed",
				"end the line with ; "+wire.MakeHook+" (from "+wire.MCPEPOCHMk+"), which exits with the build's status")
		}
		return
	}
}

// sources checks the build task's sources: nothing under .mcpepoch/ (each
// record would start another build in watch mode), and mcpepoch.toml in.
func (c *check) sources() {
	tf := c.p.Taskfile
	if tf == nil {
		return
	}
	t := tf.Task(c.pl.Build.Target)
	if t == nil || len(t.Sources) == 0 {
		return
	}
	where := fmt.Sprintf("%s:%d", tf.Path, t.Line)
	if g, ok := wire.Reaching(t.Sources); ok {
		c.problem(where, fmt.Sprintf("the sources glob %q reaches .mcpepoch/: every recorded build changes a source", g),
			"add - exclude: "+wire.StateExclude+" to the sources")
	}
	if c.p.Config && !slices.ContainsFunc(t.Sources, func(s string) bool {
		m, _ := doublestar.Match(strings.TrimPrefix(s, "./"), config.FileName)
		return !strings.HasPrefix(s, "!") && m
	}) {
		c.problem(where, config.FileName+" is not in the sources: a changed launch command does not rebuild, and a build whose hook failed stays \"up to date\"",
			"add - "+config.FileName+" to the sources ("+selfcmd.Name()+" init does)")
	}
}
