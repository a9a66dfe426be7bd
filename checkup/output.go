package checkup

import (
	"os"

	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// output checks that the host launches what a Go build writes: the file
// the build's go build writes (its -o), else the one binary its go-task
// task generates, is the launch command's executable. Whether a build that
// wrote it recorded it is unrecorded's, for every language.
func (c *check) output() {
	if c.p.GoMod == nil || len(c.pl.Command) == 0 {
		return
	}
	out, by := "", ""
	if gb := c.p.FindGoBuild(c.pl.Build.Runner, c.pl.Build.Target); gb != nil {
		out, by = gb.Output, gb.Where+" ("+gb.Cmd+")"
	} else if gen := c.p.GeneratedBinary(c.pl.Build); gen != "" {
		out, by = gen, "the generates of the task "+c.pl.Build.Target
	}
	if out == "" {
		return
	}
	launched := c.pl.Command[0]
	if c.cfg.Entry != "" {
		launched = c.cfg.Entry
	}
	if !strings.Contains(launched, "/") {
		if runtimes[strings.TrimRight(launched, "0123456789.")] {
			c.problem(config.FileName, "the host launches "+strings.Join(c.pl.Command, " ")+" (a "+launched+" program), but the build writes the Go binary "+out+", per "+by+": the host starts what no build makes",
				`set command = ["./`+out+`"] in `+config.FileName+` (`+selfcmd.Name()+` init --command ./`+out+` does it)`)
			c.outputWrong = true
		}
		return // else a command found on PATH: not a binary of this build
	}
	rel := filepath.ToSlash(c.rel(filepath.Join(c.root, launched)))
	if filepath.IsAbs(launched) {
		rel = filepath.ToSlash(c.rel(launched))
	}
	if path.Clean(rel) != out && !sameFile(filepath.Join(c.root, rel), filepath.Join(c.root, out)) {
		c.problem(config.FileName, "the host launches "+launched+", but the build writes "+out+", per "+by+": every build leaves the launched file as it was, or missing",
			`set command = ["./`+out+`"] in `+config.FileName+` (and generates of the build task to `+out+`), or make the build write `+rel)
		c.outputWrong = true
	}
}

// unrecorded reports a build output with no build recorded, in any
// language: the build is wired (a go-task task or make target), the entry
// the host launches exists and is none of the build's sources (the task's
// sources, the make target's prerequisites, or what init would list), so
// a build wrote it; and no run manifest exists. A hook that fails after a
// good build leaves the build "successful" and hosts with nothing to
// start. entry is relative to the root, or absolute.
func (c *check) unrecorded(entry string) {
	if c.pl.Build.Runner == "" || c.outputWrong {
		return
	}
	if filepath.IsAbs(entry) {
		entry = c.rel(entry)
		if filepath.IsAbs(entry) {
			return // outside the project: no build of it writes it
		}
	}
	fi, err := os.Stat(filepath.Join(c.root, entry))
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if m, _ := manifest.Read(layout.Manifest(c.root)); m != nil {
		return
	}
	if matchAny(c.buildSources(), filepath.ToSlash(entry)) {
		return // the code as written (node server.mjs): no build writes it
	}
	c.problem(config.FileName, "the build has run ("+entry+" written "+fi.ModTime().Format("15:04:05")+") but no build is recorded: the hook did not record it (it failed after the build, or the build ran without it), so hosts hear of no build",
		"run "+orTask(c.pl.Build.Runner)+" "+c.pl.Build.Target+" and read the error "+selfcmd.Name()+" record prints after the build's output")
}

// buildSources are the globs the build is made from: the go-task task's
// sources, or the make target's prerequisites, and the ones init would
// write for the project.
func (c *check) buildSources() []string {
	var globs []string
	switch c.pl.Build.Runner {
	case "task":
		if t := c.p.Taskfile.Task(c.pl.Build.Target); t != nil {
			globs = append(globs, t.Sources...)
		}
	case "make":
		globs, _ = c.p.Makefile.Sources(c.pl.Build.Target)
	}
	return append(globs, c.pl.Sources...)
}

// matchAny reports whether the slash path rel matches one of globs and
// none of the excludes ("!glob") among them.
func matchAny(globs []string, rel string) bool {
	in := false
	for _, g := range globs {
		ex := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(strings.TrimPrefix(g, "!"), "./")
		if ok, _ := doublestar.Match(g, rel); ok {
			if ex {
				return false
			}
			in = true
		}
	}
	return in
}

// runtimes are the commands that run a script rather than being the
// server's binary, without a trailing version (python3.12 is python).
var runtimes = map[string]bool{"node": true, "nodejs": true, "bun": true, "deno": true, "npx": true, "tsx": true,
	"ts-node": true, "python": true, "uv": true, "ruby": true}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
