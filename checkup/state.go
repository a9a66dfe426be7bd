package checkup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// launch checks the launch command: its entry exists once a build was
// recorded, and the server does not run from source.
func (c *check) launch() {
	if len(c.pl.Command) == 0 {
		return // reported with mcpepoch.toml
	}
	spec := c.cfg.Spec(c.root)
	spec.Command, spec.Unbuilt, spec.CacheDir = c.pl.Command, true, ""
	id, err := build.Compute(spec)
	m, _ := manifest.Read(layout.Manifest(c.root))
	built := m != nil
	switch {
	case err != nil && built:
		c.problem(config.FileName, "command "+strings.Join(c.pl.Command, " ")+": "+err.Error(), "fix command in "+config.FileName)
		return
	case err != nil && c.missingConsoleScript():
		return
	case err != nil:
		c.note("no build recorded yet (%v): run %s %s", err, orTask(c.pl.Build.Runner), c.pl.Build.Target)
		return
	}
	if !built && !id.Entry.Missing {
		c.unrecorded(id.Entry.Path)
	}
	if id.Entry.Missing {
		if c.missingConsoleScript() {
			return
		}
		if built {
			c.problem(config.FileName, "the entry "+id.Entry.Path+" does not exist: the host cannot start the server",
				"run the build; if it does not write "+id.Entry.Path+", fix command (or entry) in "+config.FileName)
		} else if !c.outputWrong {
			c.note("no build recorded yet: the entry %s is checked after the first build (%s %s)", id.Entry.Path, orTask(c.pl.Build.Runner), c.pl.Build.Target)
		}
	}
	var unc *build.UncoveredError
	if errors.As(id.Uncovered(), &unc) {
		c.problem(config.FileName, "command "+strings.Join(c.pl.Command, " ")+": its identity hashes no file of the project (the entry is "+unc.Entry+
			"): an edit of the server's code would not change its epoch, and the host refuses to start it",
			"name the code it loads in code = [...] in "+config.FileName+", or set command = [...] to run the runtime on the entry (command = [\"node\", \"server.mjs\"])")
	}
	if id.Source != "" {
		c.problem(config.FileName, id.Source, "build the server and launch the output (command in "+config.FileName+"), so that what runs changes only with a build")
	}
	c.consoleScript(id)
}

// missingConsoleScript reports a launch command that is a missing console
// script of a virtual environment in the project (.venv/bin/SCRIPT): no
// build writes it, installing the project into the environment does.
func (c *check) missingConsoleScript() bool {
	cmd := filepath.Join(c.root, c.pl.Command[0])
	if filepath.IsAbs(c.pl.Command[0]) {
		cmd = c.pl.Command[0]
	}
	venv := filepath.Dir(filepath.Dir(cmd))
	if filepath.Base(filepath.Dir(cmd)) != "bin" || !strings.HasPrefix(venv, c.root+string(filepath.Separator)) || exists(cmd) {
		return false
	}
	if !strings.HasPrefix(filepath.Base(venv), ".venv") && !strings.HasPrefix(filepath.Base(venv), "venv") && !exists(filepath.Join(venv, "pyvenv.cfg")) {
		return false
	}
	fix := "python3 -m venv " + c.rel(venv) + " && " + c.rel(venv) + "/bin/pip install -e ."
	if exists(filepath.Join(venv, "pyvenv.cfg")) {
		fix = c.rel(venv) + "/bin/pip install -e ."
	}
	c.problem(config.FileName, "the command "+c.rel(cmd)+" does not exist: it is a console script of the virtual environment "+c.rel(venv)+
		", which installing the project writes, not the build: every build's hook fails and the host cannot start the server",
		"run "+fix+" (it installs the project's scripts), or fix command in "+config.FileName)
	return true
}

// consoleScript reports an entry that is a console script of a virtual
// environment inside the project (.venv/bin/SCRIPT) while no code tree is
// hashed: the script imports the project's package through the install
// (an editable install's .pth), which the identity does not follow, so an
// edit of that package is no new epoch.
func (c *check) consoleScript(id *build.Identity) {
	if len(id.Code) > 0 || id.Entry.Missing {
		return
	}
	entry := id.Entry.Path
	if !filepath.IsAbs(entry) {
		entry = filepath.Join(c.root, entry)
	}
	venv := filepath.Dir(filepath.Dir(entry))
	if filepath.Base(filepath.Dir(entry)) != "bin" || !exists(filepath.Join(venv, "pyvenv.cfg")) || !strings.HasPrefix(venv, c.root+string(filepath.Separator)) {
		return
	}
	code := "the package it imports"
	if len(c.pl.Code) > 0 {
		code = strings.Join(c.pl.Code, ", ")
	}
	c.problem(config.FileName, "the entry "+c.rel(entry)+" is a console script of the virtual environment "+c.rel(venv)+
		": it reaches the project's own package through the install, and no code tree is hashed, so editing "+code+" restarts nothing",
		`name the package in `+config.FileName+` (code = ["`+firstOr(c.pl.Code, "PACKAGE")+`"]), then reconnect the client`)
}

func firstOr(l []string, def string) string {
	if len(l) > 0 {
		return l[0]
	}
	return def
}

func orTask(runner string) string {
	if runner == "" {
		return "task"
	}
	return runner
}

// tsc checks that a TypeScript build keeps failed output from the dist
// tree a restart would run.
func (c *check) tsc() {
	tc := c.p.TSConfig
	if tc == nil || tc.NoEmitOnError || tc.NoEmit {
		return
	}
	var cmds []string
	if c.p.Package != nil {
		cmds = append(cmds, c.p.Package.Scripts["build"])
	}
	if tf := c.p.Taskfile; tf != nil && tf.Task(c.pl.Build.Target) != nil {
		for _, cmd := range tf.Task(c.pl.Build.Target).Cmds {
			cmds = append(cmds, cmd.Cmd)
		}
	}
	if mf := c.p.Makefile; mf != nil && mf.Target(c.pl.Build.Target) != nil {
		cmds = append(cmds, mf.Target(c.pl.Build.Target).Recipe...)
	}
	if !slices.ContainsFunc(cmds, func(s string) bool { return strings.Contains(s, "tsc") }) {
		return
	}
	extends := ""
	if tc.Extends != "" {
		extends = " (set here: " + tc.Extends + ", which it extends, is not read)"
	}
	c.problem("tsconfig.json", "tsc without noEmitOnError writes its output when type checking fails: a later restart runs code the build rejected"+extends,
		`set "noEmitOnError": true in compilerOptions (`+selfcmd.Name()+` init does)`)
}

// state checks .mcpepoch/ and the sockets: the manifest and both logs
// verify, sockets are where every process looks first, and no live host
// read mcpepoch.toml before its last change.
func (c *check) state() {
	if dir, err := notify.Dir(c.root); err != nil {
		c.problem("sockets", err.Error(), "set XDG_RUNTIME_DIR to a directory of yours, for the hosts and the hook alike")
	} else if dir != layout.Sock(c.root) {
		c.problem("sockets", "the socket path fallback is in use ("+dir+"): the project root is too long for a socket under .mcpepoch/sock, so a host and a hook that see different XDG_RUNTIME_DIR or HOME miss each other, and a sandbox that allows only the project blocks the socket",
			"give hosts and hooks the same environment, or use a shorter project path; hosts also see builds through .mcpepoch/manifest.toml")
	}
	mpath := layout.Manifest(c.root)
	if _, err := manifest.Read(mpath); err != nil && !manifest.IsNotExist(err) {
		c.problem(c.rel(mpath), "does not verify: "+err.Error(), "move it aside (mv "+c.rel(mpath)+" "+c.rel(mpath)+".bad) and build again")
	}
	for _, log := range []string{layout.Audit(c.root), layout.Builds(c.root)} {
		if !exists(log) && !exists(audit.HeadPath(log)) {
			continue
		}
		rep, err := audit.Verify(log, audit.HeadPath(log))
		switch {
		case err != nil:
			c.problem(c.rel(log), err.Error(), "check the file's permissions")
		case !rep.OK:
			first := rep.Problems[0]
			c.problem(c.rel(log), fmt.Sprintf("does not verify: %s, first at line %d: %s", countProblems(len(rep.Problems)), first.Line, first.Msg),
				"keep the file as evidence; "+selfcmd.Name()+" audit verify --log "+c.rel(log)+" lists every problem")
		}
	}
	c.staleHosts()
}

// staleHosts names live hosts started before mcpepoch.toml last changed
// (a host reads it once, when it starts) and those that run another
// runtime than the build resolved (runtimeDrift).
func (c *check) staleHosts() {
	fi, err := os.Stat(filepath.Join(c.root, config.FileName))
	if err != nil {
		return
	}
	socks, err := notify.Hosts(c.root)
	if err != nil {
		return // reported with the socket directory
	}
	for _, s := range socks {
		run := epoch.RunID(strings.TrimSuffix(filepath.Base(s), ".sock"))
		st, err := os.Stat(s)
		if err != nil || errors.Is(statErr(layout.HostRecord(c.root, run)), os.ErrNotExist) {
			continue // gone, or not live
		}
		hs, err := hostStatus(s)
		if err == nil {
			c.runtimeDrift("host "+string(run), hs)
		}
		if !st.ModTime().Before(fi.ModTime()) {
			continue
		}
		started := fmt.Sprintf("started %s, before %s changed (%s)", st.ModTime().Format("15:04:05"), config.FileName, fi.ModTime().Format("15:04:05"))
		if err != nil {
			c.problem("host "+string(run), started+": it runs with the settings it read then",
				"restart the server from the client (it starts a new host), e.g. /mcp in Claude Code")
			continue
		}
		c.configNotInForce("host "+string(run), started, hs)
	}
}

// hostStatus asks the host at sock for its status (localapi.TypeStatus).
func hostStatus(sock string) (localapi.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := notify.Send(ctx, sock, notify.Request{Type: localapi.TypeStatus, Ack: true})
	if err != nil {
		return localapi.Status{}, err
	}
	return localapi.DecodePayload[localapi.Status](resp.Payload)
}

// configNotInForce reports what of a changed mcpepoch.toml the host says
// is not in force (localapi.Status ConfigChanged, PolicyNotApplied), with
// what puts it in force; nothing once all of it is.
func (c *check) configNotInForce(where, started string, hs localapi.Status) {
	if len(hs.PolicyNotApplied) > 0 {
		keys := make([]string, len(hs.PolicyNotApplied))
		for i, w := range hs.PolicyNotApplied {
			keys[i] = w.Setting
		}
		c.problem(where, started+": "+strings.Join(keys, ", ")+" would weaken the project's policy floor and are not in force",
			"a person runs "+selfcmd.Name()+" policy accept, then "+selfcmd.Name()+" restart")
	}
	if hs.ConfigChanged == "" {
		return
	}
	fix := "run the build: its signal makes the host re-read [grants]"
	switch {
	case strings.Contains(hs.ConfigChanged, "outside [grants]"):
		fix = "restart the server from the client (it starts a new host), e.g. /mcp in Claude Code"
	case strings.Contains(hs.ConfigChanged, "from the next epoch"):
		fix = "run " + selfcmd.Name() + " restart (or a build that changes the server)"
	case strings.Contains(hs.ConfigChanged, "does not load"):
		fix = "fix " + config.FileName
	}
	c.problem(where, started+": "+hs.ConfigChanged, fix)
}

// runtimeDrift reports the lines of a host's drift that say it runs
// another runtime, or the same one in another environment, than the last
// build resolved (package host's runtimeDrift: "running ≠ built: the
// runtime…", its fix after "; fix: ").
func (c *check) runtimeDrift(where string, hs localapi.Status) {
	for _, d := range hs.Drift {
		if !strings.HasPrefix(d, "running ≠ built: the runtime") {
			continue
		}
		what, fix, ok := strings.Cut(d, "; fix: ")
		if !ok {
			fix = "give the client the build's PATH"
		}
		c.problem(where, strings.TrimPrefix(what, "running ≠ built: "), fix)
	}
}

func statErr(p string) error { _, err := os.Stat(p); return err }

// countProblems counts problems in words: "1 problem", "3 problems".
func countProblems(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return fmt.Sprintf("%d problems", n)
}
