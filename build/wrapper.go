package build

import (
	"bufio"
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// shells run their "-c" argument as a command line.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh"}

// maxWrapperDepth bounds how many wrappers resolveCommand looks through.
const maxWrapperDepth = 6

// followShim returns the interpreter a version manager's shim at exe picks
// (pyenv, nodenv, rbenv; see shimRuntime), listing the shim as a wrapper
// with its why. It returns "" when exe is no shim, or is one whose choice
// cannot be resolved; then the version files the shim reads are listed as
// wrappers instead.
func followShim(exe, dir, path string, env func(string) (string, bool), whys map[string]string, id *Identity, wrappers *[]string) string {
	m := shimManager(exe, env)
	if m == "" {
		return ""
	}
	*wrappers = append(*wrappers, exe)
	whys[exe] = "a " + m + " shim: a script that picks the interpreter by version"
	real, files := shimRuntime(m, exe, dir, path, env, id)
	if real != "" {
		return real
	}
	for _, f := range files {
		*wrappers = append(*wrappers, f)
		whys[f] = "a version file the " + m + " shim reads to pick the interpreter, which mcpepoch could not resolve"
	}
	return ""
}

// resolveCommand follows the launch command through the programs and
// scripts that stand between it and the code that runs (seed: "an identity
// that ignores dispatch only proves that the wrong program stayed the
// same"):
//
//   - an executable script (#!) is a wrapper: it is hashed, and its
//     interpreter, found the way the kernel and env(1) find it, becomes the
//     runtime; "#!/usr/bin/env node" resolves node on the server's PATH. A
//     shell script's last line of the form "exec CMD ARGS" is followed too;
//   - "sh -c 'CMD ARGS'" (bash, dash, zsh, ksh) is followed to CMD ARGS,
//     after a leading "exec" and NAME=value assignments; the shell is a
//     wrapper;
//   - "env [NAME=value…] CMD ARGS" is followed to CMD ARGS;
//   - "npx NAME" resolves node_modules/.bin/NAME in the working directory
//     as the entry; npx itself, a node script, is a wrapper.
//
// A command line with shell syntax beyond plain words and quotes (&&, ;,
// |, $…, redirections) is not followed: the shell stays the runtime and
// Inferred says so, so set entry in mcpepoch.toml for such servers. On
// Linux the host also reads /proc/<pid>/exe after launch to see what really
// runs. It returns the runtime binary, the entry when one was found, and
// the wrappers in launch order, and, when direct, the arguments the runtime
// itself is given (not direct: the runtime runs a script as its
// interpreter, or npx).
//
// A version manager's shim (pyenv's, nodenv's, rbenv's, asdf's, mise's: a
// script in its shims directory) is a wrapper too; the interpreter it would
// choose is resolved without running it (see shimRuntime). env looks up the
// server's environment; whys receives the Why of wrappers that are not
// scripts the command runs (a shim's version files).
func resolveCommand(command []string, dir, path string, env func(string) (string, bool), whys map[string]string, id *Identity) (runtime, entry string, wrappers, args []string, direct bool, err error) {
	named, exe, err := lookPathNamed(command[0], dir, path)
	if err != nil {
		return "", "", nil, nil, false, err
	}
	// The runtime as the process is started, for its own configuration
	// (runtimeConfig): set whenever exe moves on.
	defer func() { id.named = named }()
	// Every command the scripts on the way run, followed or not.
	scriptCallsOf(command, dir, 0, map[string]bool{}, id)
	args, direct = command[1:], true
	name := filepath.Base(command[0]) // the program as the launch names it
	if filepath.Base(command[0]) == "npx" {
		entry, direct = npxEntry(args, dir, id), false
	}
	// follow moves on to the plain command line words, which a wrapper
	// runs; it reports false, noting why, when it cannot.
	follow := func(via string, words []string) bool {
		words = plainCommand(words)
		if len(words) == 0 {
			return false
		}
		nextNamed, next, err := lookPathNamed(words[0], dir, path)
		if err != nil {
			id.Inferred = append(id.Inferred, via+" runs "+words[0]+", not found ("+err.Error()+"): not followed")
			return false
		}
		named = nextNamed
		id.Inferred = append(id.Inferred, via+" runs "+strings.Join(words, " "))
		id.Runs = append(id.Runs, words)
		name = filepath.Base(words[0])
		if entry == "" {
			entry = fileArg(words[1:], dir, via, id)
		}
		exe, args, direct = next, words[1:], true
		return true
	}
	for depth := 0; depth < maxWrapperDepth; depth++ {
		base := filepath.Base(exe)
		if script, ok := packageScript(name, args); ok {
			pkg := filepath.Join(dir, "package.json")
			text, found := scriptText(dir, script)
			if !found {
				break // the package manager's own script: no file of the project, so Uncovered
			}
			wrappers = append(wrappers, exe, pkg)
			whys[pkg] = "package.json: its scripts." + script + " is the command " + name + " runs"
			launcherConfig(name, dir, id)
			via := name + " " + script + " (package.json scripts." + script + ")"
			words, ok := plainShell(text)
			if !ok {
				id.unfollowed = via + ": " + text
				id.Inferred = append(id.Inferred, via+" runs "+text+": shell syntax, not followed")
				break
			}
			// npm, yarn, pnpm and bun put the package's node_modules/.bin first on PATH.
			path = filepath.Join(dir, "node_modules", ".bin") + string(filepath.ListSeparator) + path
			if !follow(via, words) {
				break
			}
			continue
		}
		if base == "env" && len(args) > 0 {
			wrappers = append(wrappers, exe)
			if !follow("env", args) {
				break
			}
			continue
		}
		if slices.Contains(shells, base) && len(args) > 0 {
			if !followShell(exe, args, dir, path, &entry, &wrappers, follow, id) {
				break
			}
			continue
		}
		interp, iargs, ok := shebang(exe)
		if !ok {
			break
		}
		if real := followShim(exe, dir, path, env, whys, id, &wrappers); real != "" {
			exe, named, direct = real, real, true
			continue
		}
		if !slices.Contains(wrappers, exe) { // an unresolved shim is in already
			wrappers = append(wrappers, exe)
		}
		script, name := exe, shebangCommand(exe, interp, iargs, dir, id)
		if name == "" {
			break
		}
		nextNamed, next, err := lookPathNamed(name, dir, path)
		if err != nil {
			return "", "", nil, nil, false, err
		}
		exe, named, args, direct = next, nextNamed, nil, false
		if slices.Contains(shells, filepath.Base(next)) {
			if words, ok := lastExec(script, dir, path, id); ok && follow(display(dir, script), words) {
				continue
			}
		}
		if entry == "" {
			entry = script // the script is the entry of its interpreter
		}
	}
	return exe, entry, wrappers, args, direct, nil
}

// followShell follows a shell's arguments: "-c 'CMD ARGS'" to CMD ARGS
// when the line is a plain command, the shell a wrapper; a script
// (shellScript). It reports whether it followed.
func followShell(shell string, args []string, dir, path string, entry *string, wrappers *[]string, follow func(string, []string) bool, id *Identity) bool {
	base := filepath.Base(shell)
	switch {
	case len(args) >= 2 && args[0] == "-c":
		*wrappers = append(*wrappers, shell)
		words, ok := plainShell(args[1])
		if !ok {
			id.unfollowed = base + " -c " + args[1]
			id.Inferred = append(id.Inferred, base+" -c "+args[1]+": shell syntax, not followed: the whole project is code (name the code in code in mcpepoch.toml)")
			return false
		}
		return follow(base+" -c", words)
	case !strings.HasPrefix(args[0], "-"):
		return shellScript(shell, args[0], dir, path, entry, wrappers, follow, id)
	}
	return false
}

// shellScript follows "SHELL SCRIPT" (sh ./server.sh) as a script run by
// its shebang is followed: through its last line "exec CMD ARGS", with
// the shell a wrapper and the script, when no entry is known yet, the
// entry. It reports whether it followed; when it cannot, it notes that
// what the script runs is not hashed.
func shellScript(shell, arg, dir, path string, entry *string, wrappers *[]string, follow func(string, []string) bool, id *Identity) bool {
	script := abs(dir, arg)
	if !isRegular(script) {
		return false
	}
	if words, ok := lastExec(script, dir, path, id); ok {
		saved, n := *entry, len(*wrappers)
		if *entry == "" {
			*entry = script // hashed as the shell's entry, as before
		}
		*wrappers = append(*wrappers, shell)
		if follow(display(dir, script), words) {
			return true
		}
		*entry, *wrappers = saved, (*wrappers)[:n]
	}
	base := filepath.Base(shell)
	id.unfollowed = base + " " + arg
	id.Inferred = append(id.Inferred, base+" "+arg+": what the script runs cannot be followed (its last line is no plain command): "+
		"the whole project is code (name the code in code in mcpepoch.toml)")
	return false
}

// fileArg returns the first of args naming a regular file relative to dir,
// noting it as the entry of the command via runs, or "" if none does.
func fileArg(args []string, dir, via string, id *Identity) string {
	for _, a := range args {
		if isRegular(abs(dir, a)) {
			id.Inferred = append(id.Inferred, "entry "+a+": first argument naming a file of the command "+via+" runs")
			return a
		}
	}
	return ""
}

// shebangCommand returns the command the "#!interp iargs" line of script
// names, noting how it was found: interp itself, or, when interp is env,
// its first argument that is neither a flag nor an assignment, resolved on
// PATH. It returns "" when env is given no such argument.
func shebangCommand(script, interp string, iargs []string, dir string, id *Identity) string {
	if filepath.Base(interp) != "env" {
		id.Inferred = append(id.Inferred, display(dir, script)+" starts with #!"+interp)
		return interp
	}
	for _, a := range iargs {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			id.Inferred = append(id.Inferred, display(dir, script)+" starts with #!"+interp+" "+strings.Join(iargs, " ")+": "+a+" resolved on PATH")
			return a
		}
	}
	return ""
}

// npxEntry resolves "npx [flags] NAME" to node_modules/.bin/NAME.
func npxEntry(args []string, dir string, id *Identity) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		bin := filepath.Join(dir, "node_modules", ".bin", a)
		if real, err := filepath.EvalSymlinks(bin); err == nil && isRegular(real) {
			id.Inferred = append(id.Inferred, "entry "+display(dir, real)+": npx "+a+" runs node_modules/.bin/"+a)
			return real
		}
		return ""
	}
	return ""
}

// plainCommand drops a leading "exec" and NAME=value assignments.
func plainCommand(words []string) []string {
	for len(words) > 0 {
		switch w := words[0]; {
		case w == "exec":
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "=") && !strings.ContainsAny(w[:strings.IndexByte(w, '=')], "/."):
		default:
			return words
		}
		words = words[1:]
	}
	return nil
}

// lastExec returns the words of a shell script's last command when it is
// "exec CMD ARGS" with plain words (parsed with mvdan.cc/sh: see
// plainShell): the program the script becomes, which serves. A last
// command without exec is not followed (the script may go on, or trap),
// so the whole project is code then (shellScript). A command before it whose program is computed ("$SERVER") or
// named by a path ("./bin/migrate", "lib/setup.sh"), or a name the
// server's PATH finds inside the project, may run project code the last
// command does not name: then the whole project is code
// (id.unfollowed), and the last command is still followed.
func lastExec(script, dir, path string, id *Identity) ([]string, bool) {
	b, err := safefile.ReadFile(script, 1<<20)
	if err != nil {
		return nil, false
	}
	f, err := syntax.NewParser().Parse(bytes.NewReader(b), script)
	if err != nil || len(f.Stmts) == 0 {
		return nil, false
	}
	last := f.Stmts[len(f.Stmts)-1]
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, last); err != nil {
		return nil, false
	}
	words, ok := plainShell(buf.String())
	if !ok || !strings.HasPrefix(buf.String(), "exec ") {
		return nil, false
	}
	for _, st := range f.Stmts[:len(f.Stmts)-1] {
		hidden := ""
		syntax.Walk(st, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 || hidden != "" {
				return hidden == ""
			}
			name, lit := literal(call.Args[0])
			if !lit || strings.Contains(name, "/") || name == "." || name == "source" || name == "eval" || inProject(name, dir, path) {
				var w bytes.Buffer
				_ = syntax.NewPrinter().Print(&w, call)
				hidden = w.String()
			}
			return true
		})
		if hidden != "" {
			id.unfollowed = display(dir, script) + " runs " + hidden
			id.Inferred = append(id.Inferred, display(dir, script)+" runs "+hidden+" before its last command: a program it names by path or computes, whose code is not followed")
			break
		}
	}
	return words, true
}

// shebang reads the "#!" line of an executable script.
func shebang(p string) (interp string, args []string, ok bool) {
	f, err := safefile.Open(p)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return "", nil, false
	}
	if !bytes.HasPrefix(line, []byte("#!")) {
		return "", nil, false
	}
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 {
		return "", nil, false
	}
	return fields[0], fields[1:], true
}

// inProject reports whether name, a command name without a slash, is
// found on path inside dir: project code that a script runs by name.
func inProject(name, dir, path string) bool {
	p, err := lookPath(name, dir, path)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
