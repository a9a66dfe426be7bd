package checkup

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// output checks that the host launches what the build writes: the file the
// build's go build writes (its -o), else the one binary its go-task task
// generates, is the launch command's executable; and that a build which
// wrote it also recorded it (a hook that fails after a good build leaves
// the build "successful" and hosts with nothing to start).
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
		return
	}
	fi, err := os.Stat(filepath.Join(c.root, out))
	if err != nil {
		return
	}
	if m, _ := manifest.Read(layout.Manifest(c.root)); m == nil {
		c.problem(config.FileName, "the build has run ("+out+" written "+fi.ModTime().Format("15:04:05")+") but no build is recorded: the hook did not record it (it failed after the build, or the build ran without it), so hosts hear of no build",
			"run "+orTask(c.pl.Build.Runner)+" "+c.pl.Build.Target+" and read the error "+selfcmd.Name()+" record prints after the build's output")
		c.outputWrong = true
	}
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
