package build

import (
	"path/filepath"
	"slices"
	"strings"
)

// launchArgs is what a runtime's own command line says it will load, read
// the way the runtime reads it: options first, then the script.
type launchArgs struct {
	// known is set when the runtime is one whose options are understood
	// (node, bun, deno, python, go run); the other fields mean nothing
	// otherwise.
	known bool
	// script is the script argument as written ("dist/server.js"); empty
	// when there is none (code given with -e or -c, a REPL).
	script string
	// module is the NAME of "python -m NAME".
	module string
	// preloads are modules loaded before the script: node's
	// -r/--require/--import/--loader/--experimental-loader, bun's
	// --preload, as written.
	preloads []preload
	// goRun holds the packages or .go files of "go run"; set only then.
	goRun []string
	// runtime names the runtime for messages ("node", "python", "go run").
	runtime string
	// noUserSite is set when python is given -s or -I: it loads no user
	// site-packages (usersite.go).
	noUserSite bool
	// optimize counts python's -O options; ignoreEnv is set by -E or -I
	// (python reads no PYTHON* variable); pycachePrefix by
	// -X pycache_prefix=DIR (bytecode is read from DIR, see pycRules).
	// dontWrite by -B.
	optimize      int
	ignoreEnv     bool
	pycachePrefix bool
	dontWrite     bool
	// args are the arguments the runtime is given, as written (after a
	// wrapper the launch was followed through: its last command's).
	args []string
	// unbuilt is set when the launch command is a binary the build has
	// not written yet (Spec.Unbuilt): the entry, with no code tree, as a
	// compiled executable has none.
	unbuilt bool
}

// preload is a module a runtime loads before the script.
type preload struct {
	flag string // "--require", "--import", …
	spec string // the module as written: a path or a package name
}

// nodeValueFlags are node's options that take their value as the next
// argument (node --help); the others are booleans or take "=value".
var nodeValueFlags = []string{
	"-r", "--require", "--import", "--loader", "--experimental-loader",
	"-C", "--conditions", "--env-file", "--env-file-if-exists", "--input-type",
	"--title", "--watch-path", "--inspect-port", "--debug-port",
	"--redirect-warnings", "--report-dir", "--report-directory", "--report-filename",
	"--heapsnapshot-signal", "--diagnostic-dir", "--cpu-prof-dir", "--cpu-prof-name",
	"--heap-prof-dir", "--heap-prof-name", "--openssl-config", "--icu-data-dir",
	"--tls-cipher-list", "--secure-heap", "--secure-heap-min", "--stack-trace-limit",
	"--max-http-header-size", "--unhandled-rejections", "--dns-result-order",
	"--disable-warning", "--trace-event-categories", "--trace-event-file-pattern",
	"--localstorage-file", "--experimental-policy", "--policy-integrity",
}

// nodePreloadFlags are node's options whose value is a module loaded
// before the script.
var nodePreloadFlags = []string{"-r", "--require", "--import", "--loader", "--experimental-loader"}

// nodeEvalFlags run code given on the command line: there is no script.
var nodeEvalFlags = []string{"-e", "--eval", "-p", "--print", "--run", "-i", "--interactive"}

// bunValueFlags are bun's options that take the next argument as value.
var bunValueFlags = []string{
	"-r", "--preload", "--cwd", "--env-file", "-c", "--config",
	"--tsconfig-override", "-d", "--define", "-l", "--loader", "--conditions",
}

// goBuildValueFlags are the go command's build flags that take the next
// argument as value (go help build).
var goBuildValueFlags = []string{
	"-C", "-p", "-tags", "-ldflags", "-gcflags", "-asmflags", "-mod",
	"-modfile", "-overlay", "-pkgdir", "-toolexec", "-exec", "-buildmode",
	"-compiler", "-gccgoflags", "-installsuffix", "-pgo", "-coverpkg",
	"-covermode", "-o",
}

// isPythonName reports whether base names a Python interpreter: python
// or pypy, then optionally a version, digits with at most one dot inside
// (python3, python3.12, pypy3). Every identity asks, so it is no regexp:
// compiling one cost a record more than the rest of parsing its launch.
func isPythonName(base string) bool {
	rest, ok := strings.CutPrefix(base, "python")
	if !ok {
		if rest, ok = strings.CutPrefix(base, "pypy"); !ok {
			return false
		}
	}
	if rest == "" {
		return true
	}
	major, minor, dot := strings.Cut(rest, ".")
	return allDigits(major) && (!dot || allDigits(minor))
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseLaunch reads the arguments args that the runtime binary exe is
// given.
func parseLaunch(exe string, args []string) launchArgs {
	base := filepath.Base(exe)
	switch {
	case base == "node" || base == "nodejs":
		return parseNode(args, nodeValueFlags, nodePreloadFlags, "node")
	case base == "bun":
		if len(args) > 0 && args[0] == "run" {
			args = args[1:]
		}
		return parseNode(args, bunValueFlags, []string{"-r", "--preload"}, "bun")
	case base == "deno":
		if len(args) == 0 || (args[0] != "run" && args[0] != "serve") {
			return launchArgs{}
		}
		return parseNode(args[1:], []string{"-c", "--config", "--import-map", "--lock", "--env-file", "--location", "--cert", "--preload"},
			[]string{"--preload"}, "deno")
	case isPythonName(base):
		return parsePython(args)
	case base == "go":
		return parseGoRun(args)
	}
	return launchArgs{}
}

// parseNode reads a node-style command line: options (valued ones taking
// the next argument unless written NAME=value), then the script; "--" ends
// the options.
func parseNode(args []string, valued, preloads []string, name string) launchArgs {
	l := launchArgs{known: true, runtime: name}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				l.script = args[i+1]
			}
			return l
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			if a != "-" {
				l.script = a
			}
			return l
		}
		flag, value, hasValue := strings.Cut(a, "=")
		if slices.Contains(nodeEvalFlags, flag) && name == "node" {
			return l
		}
		if !hasValue && slices.Contains(valued, flag) {
			if i+1 >= len(args) {
				return l
			}
			i++
			value, hasValue = args[i], true
		}
		if hasValue && slices.Contains(preloads, flag) {
			l.preloads = append(l.preloads, preload{flag: flag, spec: value})
		}
	}
	return l
}

// parsePython reads a python command line: single-letter options that may
// be grouped (-uB), -W and -X with a value, -c CODE (no script), -m NAME,
// then the script.
func parsePython(args []string) launchArgs {
	l := launchArgs{known: true, runtime: "python"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				l.script = args[i+1]
			}
			return l
		case a == "-" || !strings.HasPrefix(a, "-"):
			if a != "-" {
				l.script = a
			}
			return l
		case strings.HasPrefix(a, "--"):
			if a == "--check-hash-based-pycs" {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 's':
				l.noUserSite = true
			case 'I':
				l.noUserSite, l.ignoreEnv = true, true
			case 'E':
				l.ignoreEnv = true
			case 'O':
				l.optimize++
			case 'B':
				l.dontWrite = true
			case 'c':
				return l
			case 'm', 'W', 'X':
				v := a[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if a[j] == 'm' {
					l.module = v
					return l
				}
				if a[j] == 'X' && strings.HasPrefix(v, "pycache_prefix=") {
					l.pycachePrefix = true
				}
				j = len(a)
			}
		}
	}
	return l
}

// parseGoRun reads "go run [build flags] PACKAGE|FILES… [args]".
func parseGoRun(args []string) launchArgs {
	if len(args) == 0 || args[0] != "run" {
		return launchArgs{}
	}
	l := launchArgs{known: true, runtime: "go run"}
	args = args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			name, _, hasValue := strings.Cut(a, "=")
			name = "-" + strings.TrimLeft(name, "-")
			if !hasValue && slices.Contains(goBuildValueFlags, name) {
				i++
			}
			continue
		}
		if strings.HasSuffix(a, ".go") {
			for _, f := range args[i:] {
				if !strings.HasSuffix(f, ".go") {
					break
				}
				l.goRun = append(l.goRun, f)
			}
		} else {
			l.goRun = []string{a}
		}
		return l
	}
	return l
}

// isPathSpec reports whether a module specifier names a file rather than a
// package: ./x, ../x, /x or a file: URL.
func isPathSpec(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/") ||
		strings.HasPrefix(s, "file:") || s == "." || s == ".."
}

// sourceExts are extensions of source files that a runtime compiles as it
// loads them (tsx, ts-node, bun, deno, node's type stripping): a server
// whose entry has one runs from source.
var sourceExts = []string{".ts", ".mts", ".cts", ".tsx", ".jsx"}

// codeExts are extensions of files a runtime loads as code: a command
// argument with one names a file the server needs, whether or not it
// exists yet.
var codeExts = []string{
	".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx",
	".py", ".rb", ".pl", ".php", ".lua",
}
