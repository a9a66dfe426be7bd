package project

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Kind is the language a project's server is written in, as the build
// files tell it.
type Kind string

const (
	KindNode   Kind = "node"   // package.json
	KindGo     Kind = "go"     // go.mod with a package main
	KindPython Kind = "python" // pyproject.toml
	KindOther  Kind = ""       // none of these
)

// Plan is the wiring a project most likely wants: how the server is
// launched and built, and what a watcher should watch. Every field is a
// guess from the build files; Reasons says what each came from.
type Plan struct {
	Kind    Kind
	Label   string   // the server's name in client configs
	Command []string // launch command, relative to the root
	Entry   string   // the file Command's runtime loads, relative; "" when unknown
	Build   Build
	// Code are the project's own code trees, relative to the root, that
	// the launch reaches only through an install the identity does not
	// follow (a console script in .venv imports the package through an
	// editable install's .pth): mcpepoch.toml's code.
	Code []string
	// Sources are doublestar globs, relative to the root, whose changes
	// call for a build; one starting with "!" excludes what it matches.
	// They never match .mcpepoch/.
	Sources []string
	Reasons []string // one line per guess, for init to show
}

// Build is how the project is built.
type Build struct {
	// Runner is "task" when the Taskfile has the task Target, "make" when
	// the Makefile has the target, else "" (no build tool wired yet).
	Runner  string
	Target  string   // the task or make target, "build" by default
	Command []string // the build command a new task or target should run; nil when nothing needs building
}

// Plan returns the most likely wiring of p.
func (p *Project) Plan() Plan {
	var pl Plan
	pl.Build.Target = "build"
	var why string
	switch {
	case p.Taskfile != nil && p.Taskfile.Task("build") != nil:
		pl.Build.Runner = "task"
		why = "build: the task build of " + p.Taskfile.Path
	case p.Makefile != nil && p.Makefile.Target("build") != nil:
		pl.Build.Runner = "make"
		why = "build: the target build of " + p.Makefile.Path
	}
	node := p.Package != nil
	if node {
		if skip := p.notNodeServer(pl.Build); skip != "" {
			node = false
			pl.Reasons = append(pl.Reasons, "package.json: not the server's, "+skip)
		}
	}
	switch {
	case node:
		p.planNode(&pl)
	case p.GoMod != nil && len(p.GoMod.Mains) > 0:
		p.planGo(&pl)
	case p.PyProject != nil:
		p.planPython(&pl)
	}
	if pl.Kind == "" && len(pl.Sources) == 0 {
		// No build files of a language say which files are the server's
		// (a server.py on its own): every file of the project is, as the
		// identity of a script entry takes the whole project tree, so any
		// change runs the build and its hook, and the identity says what
		// changed.
		pl.Sources = append(pl.Sources, "**/*", "!.mcpepoch/**", "!.task/**", "!.git/**", "!node_modules/**", "!.venv/**", "!**/__pycache__/**")
		pl.Reasons = append(pl.Reasons, "sources: every file of the project (no build files of a language say which are the server's)")
	}
	if pl.Label == "" {
		pl.Label = filepath.Base(p.Root)
		pl.Reasons = append(pl.Reasons, "label: the directory's name")
	}
	if why != "" {
		pl.Reasons = append(pl.Reasons, why)
	}
	pl.Sources = append(pl.Sources, p.Lockfiles...)
	if p.Config {
		pl.Sources = append(pl.Sources, "mcpepoch.toml")
	}
	return pl
}

// notNodeServer says why package.json does not describe the server, or ""
// when it does: the build writes a Go binary (go build in the build task
// or target), or package.json is only what `npm i -D mcpepoch` writes into
// a project that had none (no main, bin or scripts beyond npm's test
// placeholder, no tsconfig.json or src/, no dependency but mcpepoch's).
func (p *Project) notNodeServer(b Build) string {
	if p.GoMod != nil && len(p.GoMod.Mains) > 0 {
		if gb := p.FindGoBuild(b.Runner, b.Target); gb != nil {
			return "the build runs " + gb.Cmd + " (" + gb.Where + ")"
		}
	}
	pkg := p.Package
	if pkg.Main != "" || len(pkg.Bin) > 0 || p.TSConfig != nil || isDir(filepath.Join(p.Root, "src")) {
		return ""
	}
	for name, script := range pkg.Scripts {
		if name != "test" || !strings.Contains(script, "no test specified") {
			return ""
		}
	}
	for name := range pkg.Deps {
		if name != "mcpepoch" && !strings.HasPrefix(name, "@mcpepoch/") {
			return ""
		}
	}
	return "it only installs mcpepoch"
}

func (p *Project) planNode(pl *Plan) {
	pkg := p.Package
	pl.Kind = KindNode
	pl.Label = npmBase(pkg.Name)
	if pl.Label != "" {
		pl.Reasons = append(pl.Reasons, "label: package.json name")
	}
	outDir := "dist"
	if p.TSConfig != nil && p.TSConfig.OutDir != "" {
		outDir = path.Clean(strings.TrimPrefix(filepath.ToSlash(p.TSConfig.OutDir), "./"))
	}
	switch {
	case len(pkg.Bin) > 0:
		names := make([]string, 0, len(pkg.Bin))
		for n := range pkg.Bin {
			names = append(names, n)
		}
		slices.Sort(names)
		pl.Entry = cleanRel(pkg.Bin[names[0]])
		pl.Reasons = append(pl.Reasons, "entry: package.json bin "+names[0])
	case pkg.Main != "" && (p.TSConfig == nil || strings.HasPrefix(cleanRel(pkg.Main), outDir+"/")):
		pl.Entry = cleanRel(pkg.Main)
		pl.Reasons = append(pl.Reasons, "entry: package.json main")
	default:
		// npm init writes "main": "index.js", which is not what tsc
		// emits: the entry is the compiled form of the likely source.
		name := "index"
		for _, n := range []string{"index", "server", "main"} {
			if p.exists("src/" + n + ".ts") {
				name = n
				break
			}
		}
		pl.Entry = outDir + "/" + name + ".js"
		pl.Reasons = append(pl.Reasons, "entry: "+pl.Entry+", what the compiler emits for src/"+name+".ts")
	}
	pl.Command = []string{"node", pl.Entry}
	switch {
	case pkg.Scripts["build"] != "":
		pl.Build.Command = []string{"npm", "run", "--silent", "build"}
		pl.Reasons = append(pl.Reasons, "build command: package.json script build")
	case p.TSConfig != nil:
		pl.Build.Command = []string{"node_modules/.bin/tsc"}
		pl.Reasons = append(pl.Reasons, "build command: tsc, for tsconfig.json")
	}
	src := "src"
	if p.TSConfig != nil && p.TSConfig.RootDir != "" {
		src = path.Clean(strings.TrimPrefix(filepath.ToSlash(p.TSConfig.RootDir), "./"))
	}
	if pl.Build.Command == nil {
		// Plain JavaScript run as written: the code is the source.
		src = path.Dir(pl.Entry)
	}
	pl.Sources = append(pl.Sources, src+"/**/*", "package.json")
	if p.TSConfig != nil {
		pl.Sources = append(pl.Sources, "tsconfig.json")
	}
}

func (p *Project) planGo(pl *Plan) {
	g := p.GoMod
	pl.Kind = KindGo
	main := g.Mains[0]
	base := path.Base(g.Module)
	for _, m := range g.Mains {
		if path.Base(m) == base {
			main = m
		}
	}
	name := base
	if main != "." {
		name = path.Base(main)
	}
	pl.Label = name
	pl.Sources = append(pl.Sources, "**/*.go", "go.mod")
	if p.builtGo(pl, main) {
		return
	}
	pl.Reasons = append(pl.Reasons, "label and binary: the package main in "+main)
	pl.Entry = "bin/" + name
	pl.Command = []string{"./" + pl.Entry}
	pl.Build.Command = []string{"go", "build", "-o", pl.Entry, "./" + strings.TrimPrefix(main, "./")}
	if main == "." {
		pl.Build.Command[len(pl.Build.Command)-1] = "."
	}
	pl.Reasons = append(pl.Reasons, "build command: go build into "+pl.Entry)
}

// builtGo takes the binary from the build the project already has: the
// file its go build writes, else the one file its go-task build task
// generates. It reports false when neither tells.
func (p *Project) builtGo(pl *Plan, main string) bool {
	if gb := p.FindGoBuild(pl.Build.Runner, pl.Build.Target); gb != nil {
		pl.Entry = gb.Output
		pl.Reasons = append(pl.Reasons, "label: the package main in "+main,
			"binary: "+gb.Output+", what "+gb.Cmd+" in "+gb.Where+" writes")
		pl.Build.Command = strings.Fields(gb.Cmd)
	} else if gen := p.GeneratedBinary(pl.Build); gen != "" {
		pl.Entry = gen
		pl.Reasons = append(pl.Reasons, "label: the package main in "+main,
			"binary: "+gen+", what the task "+pl.Build.Target+" of "+p.Taskfile.Path+" generates")
		pl.Build.Command = []string{"task", pl.Build.Target}
	} else {
		return false
	}
	pl.Command = []string{"./" + pl.Entry}
	return true
}

// GeneratedBinary returns the one file, not a glob and not under
// .mcpepoch/, that the go-task build task lists in generates; "" for none
// or several.
func (p *Project) GeneratedBinary(b Build) string {
	if b.Runner != "task" {
		return ""
	}
	var out []string
	for _, g := range p.Taskfile.Task(b.Target).Generates {
		g = cleanRel(g)
		if !strings.ContainsAny(g, "*?[{!") && !strings.HasPrefix(g, ".mcpepoch/") && !strings.HasPrefix(g, "..") {
			out = append(out, g)
		}
	}
	if len(out) != 1 {
		return ""
	}
	return out[0]
}

func (p *Project) planPython(pl *Plan) {
	py := p.PyProject
	pl.Kind = KindPython
	pl.Label = py.Name
	if pl.Label != "" {
		pl.Reasons = append(pl.Reasons, "label: pyproject.toml name")
	}
	names := make([]string, 0, len(py.Scripts))
	for n := range py.Scripts {
		names = append(names, n)
	}
	slices.Sort(names)
	uv := slices.Contains(p.Lockfiles, "uv.lock")
	switch {
	case len(names) > 0 && uv:
		pl.Command = []string{"uv", "run", names[0]}
		pl.Reasons = append(pl.Reasons, "command: uv run the script "+names[0]+" of pyproject.toml")
	case len(names) > 0:
		pl.Command = []string{".venv/bin/" + names[0]}
		why := "command: the script " + names[0] + " of pyproject.toml in .venv"
		if !isDir(filepath.Join(p.Root, ".venv")) {
			why += " (there is no .venv yet: python3 -m venv .venv && .venv/bin/pip install -e . creates it and installs the script)"
		}
		pl.Reasons = append(pl.Reasons, why)
	}
	if len(names) > 0 {
		if mod, _, ok := strings.Cut(py.Scripts[names[0]], ":"); ok {
			mod = strings.TrimSpace(mod)
			pl.Entry = strings.ReplaceAll(mod, ".", "/") + ".py"
			top, _, _ := strings.Cut(mod, ".")
			for _, dir := range []string{top, "src/" + top} {
				if top != "" && isDir(filepath.Join(p.Root, filepath.FromSlash(dir))) {
					pl.Code = []string{dir}
					pl.Reasons = append(pl.Reasons, "code: the package "+dir+" the script imports, hashed as the project's own code (the script in .venv reaches it through the install, which identity does not follow)")
					break
				}
			}
		}
	}
	if len(pl.Code) > 0 {
		pl.Sources = append(pl.Sources, pl.Code[0]+"/**/*.py", "pyproject.toml")
		return
	}
	pl.Sources = append(pl.Sources, "**/*.py", "!.venv/**", "pyproject.toml")
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// npmBase returns an npm package name without its @scope/.
func npmBase(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// cleanRel cleans a relative path as written in package.json ("./dist/x.js").
func cleanRel(p string) string { return path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./")) }

// HasHook reports whether the task runs the mcpepoch hook: a defer that
// calls a task named …record of an include whose Taskfile is named
// mcpepoch…, or a deferred command that runs mcpepoch record.
func (tf *Taskfile) HasHook(t *Task) bool {
	for _, c := range t.Cmds {
		if c.Defer && c.Cmd != "" && strings.Contains(c.Cmd, "mcpepoch") && strings.Contains(c.Cmd, "record") {
			return true
		}
		if c.Defer && c.Task != "" {
			ns, name, ok := strings.Cut(c.Task, ":")
			if !ok || name != "record" {
				continue
			}
			for _, inc := range tf.Includes {
				if inc.Namespace == ns && strings.Contains(path.Base(inc.Taskfile), "mcpepoch") {
					return true
				}
			}
		}
	}
	return false
}

// HasHook reports whether the target's recipe runs the mcpepoch hook
// ($(MCPEPOCH_RECORD), or mcpepoch record on a recipe line).
func (t *Target) HasHook() bool {
	for _, line := range t.Recipe {
		if strings.Contains(line, "$(MCPEPOCH_RECORD)") || strings.Contains(line, "${MCPEPOCH_RECORD}") ||
			(strings.Contains(line, "mcpepoch") && strings.Contains(line, " record")) {
			return true
		}
	}
	return false
}
