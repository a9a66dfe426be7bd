package checkup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/project"
	"github.com/mcpepoch/mcpepoch/wire"
)

// versionTimeout bounds `CMD version`, run to learn which mcpepoch the
// hook runs.
const versionTimeout = 10 * time.Second

// hookCommand is the mcpepoch the build's hook runs, as written in the
// build file.
type hookCommand struct {
	cmd   string // as written, shell quotes removed
	where string // file:line of the assignment, or the build file
	// set says how to point the hook at the mcpepoch at path, for a fix.
	set func(path string) string
}

// hookCommand checks that the command the hook runs (MCPEPOCH in the
// Taskfile or Makefile, else mcpepoch.mk's and mcpepoch.Taskfile.yml's
// default "mcpepoch") is an executable, and the same mcpepoch as this
// one. A bare name resolved through PATH is a note: the PATH of a desktop
// client, an editor or an agent's sandbox that runs the build is often
// not this shell's (`go install` puts mcpepoch in ~/go/bin).
func (c *check) hookCommand(o Options) {
	hc, ok := c.hookCmd()
	if !ok {
		return
	}
	self := o.Self
	if self == "" {
		self = "/ABSOLUTE/PATH/TO/mcpepoch"
	}
	fix := hc.set(self)
	if strings.ContainsAny(hc.cmd, "$`{}") {
		c.note("%s: the hook runs %q, which is not checked: it is expanded when the build runs", hc.where, hc.cmd)
		return
	}
	path := hc.cmd
	if strings.Contains(path, "/") {
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.root, path)
		}
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			c.problem(hc.where, fmt.Sprintf("the hook runs %s, which is not an executable file: every build skips the hook", hc.cmd), fix)
			return
		}
	} else {
		found, err := exec.LookPath(path)
		if err != nil {
			c.problem(hc.where, fmt.Sprintf("the hook runs %q, which is not on PATH: every build skips the hook", hc.cmd), fix)
			return
		}
		c.note("%s: the hook runs %s from PATH (%s): a build started where PATH lacks %s (a desktop client, an editor) skips the hook; %s",
			hc.where, hc.cmd, found, filepath.Dir(found), hc.set(found))
		path = found
	}
	if msg := c.incomplete(path); msg != "" {
		c.problem(hc.where, "the hook runs "+hc.cmd+", an incomplete install ("+msg+"): record works, but "+selfcmd.Name()+" dev and every command but version and record fail",
			installFix(path)+"; or "+fix)
		return
	}
	if o.Version == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").Output()
	got, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	switch {
	case err != nil:
		c.problem(hc.where, fmt.Sprintf("the hook runs %s, and `%s version` fails (%v): it is not mcpepoch, or is broken", hc.cmd, hc.cmd, err), fix)
	case got != o.Version && sameRevision(got, o.Version):
		// Another install of the same revision (npm's and go install's
		// differ in version and stamps): it records builds alike.
	case got != o.Version:
		c.problem(hc.where, fmt.Sprintf("the hook runs %s, which is %q, not this %q: builds are recorded by another mcpepoch", hc.cmd, got, o.Version), fix)
	}
}

// hookCmd finds the command the build file's hook runs; false when the
// build runs no hook (hook() reports that).
func (c *check) hookCmd() (hookCommand, bool) {
	target := c.pl.Build.Target
	switch tf, mf := c.p.Taskfile, c.p.Makefile; {
	case tf != nil:
		t := tf.Task(target)
		if t == nil || !tf.HasHook(t) {
			return hookCommand{}, false
		}
		set := func(p string) string {
			return "set MCPEPOCH under vars: in " + tf.Path + " to " + p + " (" + selfcmd.Name() + " init writes it)"
		}
		for _, cmd := range t.Cmds {
			if cmd.Defer && strings.Contains(cmd.Cmd, "record") {
				if w := firstWord(cmd.Cmd); !strings.Contains(w, "{{") {
					return hookCommand{cmd: w, where: fmt.Sprintf("%s:%d", tf.Path, cmd.Line), set: literal}, true
				}
			}
		}
		if v, ok := tf.AST.Vars.Get("MCPEPOCH"); ok {
			if s, ok := v.Value.(string); ok {
				return hookCommand{cmd: templateDefault(s), where: tf.Path + varLine(tf, "MCPEPOCH"), set: set}, true
			}
			return hookCommand{}, false
		}
		return hookCommand{cmd: "mcpepoch", where: tf.Path, set: set}, true
	case mf != nil:
		t := mf.Target(target)
		if t == nil || !t.HasHook() {
			return hookCommand{}, false
		}
		set := func(p string) string {
			return "write MCPEPOCH ?= " + p + " before include " + wire.MCPEPOCHMk + " in " + mf.Path + " (" + selfcmd.Name() + " init writes it)"
		}
		if a := mf.Var("MCPEPOCH"); a != nil {
			return hookCommand{cmd: firstWord(a.Value), where: fmt.Sprintf("%s:%d", mf.Path, a.Line), set: set}, true
		}
		for _, l := range t.Recipe {
			if i := strings.Index(l, " record"); i > 0 && !strings.Contains(l, "MCPEPOCH") {
				f := strings.Fields(l[:i])
				return hookCommand{cmd: firstWord(f[len(f)-1]), where: fmt.Sprintf("%s:%d", mf.Path, t.Line), set: literal}, true
			}
		}
		return hookCommand{cmd: "mcpepoch", where: mf.Path, set: set}, true
	}
	return hookCommand{}, false
}

// literal is the fix for a hook whose command is written out.
func literal(p string) string { return "write the hook's command as " + p + " record" }

// defaultArg is the argument of go-task's `default` in a template such as
// {{.MCPEPOCH | default "mcpepoch"}}.
var defaultArg = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\{\{\s*\.MCPEPOCH\s*\|\s*default\s+("(?:[^"\\]|\\.)*")\s*\}\}$`)
}) // compiled on first use

// templateDefault returns the command a Taskfile's MCPEPOCH value runs
// when the variable is not given: the template's default, or the value.
func templateDefault(v string) string {
	if m := defaultArg().FindStringSubmatch(strings.TrimSpace(v)); m != nil {
		if s, err := strconv.Unquote(m[1]); err == nil {
			return firstWord(s)
		}
	}
	return firstWord(v)
}

// firstWord is the first word of a shell command, single or double quotes
// removed (enough for a path; no expansion).
func firstWord(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 0 && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == q && q == '\'' && strings.HasPrefix(s[i:], `'\''`):
				b.WriteByte('\'')
				i += 3
			case s[i] == q:
				return b.String()
			default:
				b.WriteByte(s[i])
			}
		}
		return b.String()
	}
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// varLine is ":LINE" of the top-level var name in the Taskfile, or "".
func varLine(tf *project.Taskfile, name string) string {
	vars := project.MapValue(tf.Doc, "vars")
	if vars == nil {
		return ""
	}
	for i := 0; i+1 < len(vars.Content); i += 2 {
		if vars.Content[i].Value == name {
			return ":" + strconv.Itoa(vars.Content[i].Line)
		}
	}
	return ""
}
