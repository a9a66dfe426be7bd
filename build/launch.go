package build

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
}

// preload is a module a runtime loads before the script.
type preload struct {
	flag string // "--require", "--import", …
	spec string // the module as written: a path or a package name
}

// nodeValueFlags are node's options that take their value as the next
// argument (node --help); the others are booleans or take "=value".
var nodeValueFlags = map[string]bool{
	"-r": true, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true,
	"-C": true, "--conditions": true, "--env-file": true, "--env-file-if-exists": true, "--input-type": true,
	"--title": true, "--watch-path": true, "--inspect-port": true, "--debug-port": true,
	"--redirect-warnings": true, "--report-dir": true, "--report-directory": true, "--report-filename": true,
	"--heapsnapshot-signal": true, "--diagnostic-dir": true, "--cpu-prof-dir": true, "--cpu-prof-name": true,
	"--heap-prof-dir": true, "--heap-prof-name": true, "--openssl-config": true, "--icu-data-dir": true,
	"--tls-cipher-list": true, "--secure-heap": true, "--secure-heap-min": true, "--stack-trace-limit": true,
	"--max-http-header-size": true, "--unhandled-rejections": true, "--dns-result-order": true,
	"--disable-warning": true, "--trace-event-categories": true, "--trace-event-file-pattern": true,
	"--localstorage-file": true, "--experimental-policy": true, "--policy-integrity": true,
}

// nodePreloadFlags are node's options whose value is a module loaded
// before the script.
var nodePreloadFlags = map[string]bool{"-r": true, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true}

// nodeEvalFlags run code given on the command line: there is no script.
var nodeEvalFlags = map[string]bool{"-e": true, "--eval": true, "-p": true, "--print": true, "--run": true, "-i": true, "--interactive": true}

// bunValueFlags are bun's options that take the next argument as value.
var bunValueFlags = map[string]bool{
	"-r": true, "--preload": true, "--cwd": true, "--env-file": true, "-c": true, "--config": true,
	"--tsconfig-override": true, "-d": true, "--define": true, "-l": true, "--loader": true, "--conditions": true,
}

// goBuildValueFlags are the go command's build flags that take the next
// argument as value (go help build).
var goBuildValueFlags = map[string]bool{
	"-C": true, "-p": true, "-tags": true, "-ldflags": true, "-gcflags": true, "-asmflags": true, "-mod": true,
	"-modfile": true, "-overlay": true, "-pkgdir": true, "-toolexec": true, "-exec": true, "-buildmode": true,
	"-compiler": true, "-gccgoflags": true, "-installsuffix": true, "-pgo": true, "-coverpkg": true,
	"-covermode": true, "-o": true,
}

var pythonName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(python|pypy)(\d+(\.\d+)?)?$`) }) // compiled on first use

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
		return parseNode(args, bunValueFlags, map[string]bool{"-r": true, "--preload": true}, "bun")
	case base == "deno":
		if len(args) == 0 || (args[0] != "run" && args[0] != "serve") {
			return launchArgs{}
		}
		return parseNode(args[1:], map[string]bool{"-c": true, "--config": true, "--import-map": true,
			"--lock": true, "--env-file": true, "--location": true, "--cert": true, "--preload": true},
			map[string]bool{"--preload": true}, "deno")
	case pythonName().MatchString(base):
		return parsePython(args)
	case base == "go":
		return parseGoRun(args)
	}
	return launchArgs{}
}

// parseNode reads a node-style command line: options (valued ones taking
// the next argument unless written NAME=value), then the script; "--" ends
// the options.
func parseNode(args []string, valued, preloads map[string]bool, name string) launchArgs {
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
		if nodeEvalFlags[flag] && name == "node" {
			return l
		}
		if !hasValue && valued[flag] {
			if i+1 >= len(args) {
				return l
			}
			i++
			value, hasValue = args[i], true
		}
		if hasValue && preloads[flag] {
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
			if !hasValue && goBuildValueFlags[name] {
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
var sourceExts = map[string]bool{".ts": true, ".mts": true, ".cts": true, ".tsx": true, ".jsx": true}

// codeExts are extensions of files a runtime loads as code: a command
// argument with one names a file the server needs, whether or not it
// exists yet.
var codeExts = map[string]bool{
	".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true, ".jsx": true,
	".py": true, ".rb": true, ".pl": true, ".php": true, ".lua": true,
}
