package build

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// nodeCodeFiles are the files node loads as code from a project: modules
// (.js, .mjs, .cjs), native addons and WebAssembly, the package.json
// files whose "type", "imports" and "exports" change how a module is
// loaded, and every file with no extension (""): for require("./lib/x")
// node's CommonJS loader tries the file lib/x itself before lib/x.js
// (the Node.js documentation, "All together": LOAD_AS_FILE), and loads a
// file of an extension it does not know as JavaScript, so a file created
// beside lib/x.js shadows it. JSON data (a server's own state) is left
// out: node can require it, but it is data the server reads, like any
// file; it cannot shadow a module (X.js is tried before X.json).
var nodeCodeFiles = []string{".js", ".mjs", ".cjs", ".node", ".wasm", "package.json", ""}

// nodeTypeFiles are nodeCodeFiles with the TypeScript modules a node that
// strips types loads too (nodeStripsTypes).
var nodeTypeFiles = append(slices.Clip(nodeCodeFiles), ".ts", ".mts", ".cts")

// sourceCodeFiles are the files a runtime that compiles TypeScript and JSX
// as it loads them (bun, deno, tsx, ts-node; a server run from source)
// loads as code: node's with its TypeScript modules, the JSX and TSX
// sources, and tsconfig.json, whose "paths" change what an import
// resolves to.
var sourceCodeFiles = append(slices.Clip(nodeTypeFiles), ".tsx", ".jsx", "tsconfig.json")

// pythonCodeFiles are the files Python imports from a directory on its
// path (importlib's FileFinder: source, sourceless bytecode and extension
// modules, whose suffixes all end in .so on Linux and macOS). The bytecode
// in __pycache__ is an input of its own (pycRules).
var pythonCodeFiles = []string{".py", ".pyc", ".so"}

// projectCode returns the code a script entry loads from the project (the
// rule of every runtime that loads code from files: it can load it from
// anywhere below the project root, node's import of ../lib/x.mjs, Python
// with the root on sys.path or any directory it adds there): the whole
// tree under dir, dependency trees (hashed as such), .git, .mcpepoch and
// .cache left out (CodeSkipDirs), and git-ignored and generated files
// counted, since ignored by git is not never loaded. The tree lists only
// the files the runtime loads as code when mcpepoch knows its language
// (scriptLang), every file otherwise. ok is false when the entry is no
// script: none, a compiled executable (which carries its own code), one
// outside dir (noted in id), one in a dependency tree, or a script the
// launch went through to a compiled executable that is not given it.
func projectCode(spec Spec, dir, entry, runtime string, l launchArgs, source bool, id *Identity) (c codeInput, ok bool) {
	if entry == "" {
		return codeInput{}, false
	}
	full := abs(dir, entry)
	// A runtime that loads code from files (node, bun, deno, python) loads
	// it from the project whatever the entry setting names: the project
	// tree is its code even when the entry is a compiled file or lies in a
	// dependency tree (node node_modules/boot.js requiring ../server.js).
	// The setting describes; it takes nothing out.
	scriptRuntime := l.known && l.goRun == nil && !l.unbuilt
	switch {
	case !inside(dir, full):
		// The code lies outside the project: nothing of the project
		// vouches for it, and a launch that hashes nothing of the project
		// is refused (Identity.Uncovered).
		id.Inferred = append(id.Inferred, "code: the entry lies outside "+dir+", no code tree inferred (name one in code in mcpepoch.toml)")
		return codeInput{}, false
	case scriptRuntime:
	case full == runtime, l.unbuilt, nativeExecutable(full):
		return codeInput{}, false // a compiled executable carries its own code
	case !l.known && !givenTo(dir, full, l.args) && nativeExecutable(runtime) && spec.Entry == "":
		// The entry is a script the launch went through (sh run.sh, whose
		// last line execs ./bin/server), not one the runtime is given:
		// what runs is a compiled executable, which carries its own code.
		return codeInput{}, false
	case inDeps(spec, dir, full) && spec.Entry == "":
		// A launch that runs a script of a dependency tree: its code is that
		// tree, hashed as such. An entry setting naming one takes nothing
		// out: the project stays code.
		return codeInput{}, false
	}
	lang, only := scriptLang(full, l, runtime, source)
	if !l.known && spec.Entry != "" {
		// For a runtime mcpepoch does not know, only the entry's extension
		// says what it loads, and an entry setting is no evidence of
		// that: every file is code.
		lang, only = "", nil
	}
	if lang == "node" && nodeStripsTypes(spec, l, id.Runtime.Version) {
		only = nodeTypeFiles
	}
	if only != nil && lang != "python" && hooksLoader(spec, l) {
		// A module preloaded into the loader (ts-node/register,
		// @babel/register, a --loader hook) decides which files are code:
		// every file may be.
		only = nil
		id.Inferred = append(id.Inferred, "code: "+lang+" preloads a module (-r, --import, --loader, or in NODE_OPTIONS/BUN_OPTIONS), which may load files of any extension as code: every file of the project counts")
	}
	files := "every file"
	if only != nil {
		names := slices.DeleteFunc(slices.Clone(only), func(s string) bool { return s == "" })
		files = "its " + strings.Join(names, ", ") + " files"
		if len(names) < len(only) {
			files += " and files with no extension"
		}
	}
	c = codeInput{path: dir, only: only}
	if lang != "" {
		c.why = fmt.Sprintf("the project the entry lies in: %s, since %s loads code from anywhere below the project root", files, lang)
	} else {
		c.why = fmt.Sprintf("the project the entry lies in: %s, since what %s loads from it cannot be told", files, display(dir, runtime))
	}
	id.Inferred = append(id.Inferred, "code: "+entry+" is a script: the whole project tree is code, "+files+" (name the code in code in mcpepoch.toml)")
	return c, true
}

// scriptLang names the language a script entry full (absolute) is loaded
// as, and the files its runtime loads as code (TreeOptions.OnlyFiles):
// "python" (a python runtime or a .py entry), "node" (node, or a .js,
// .mjs or .cjs entry), or, for bun, deno or a server run from source
// (source), that runtime with sourceCodeFiles. Both are empty for another
// runtime, whose code is then every file.
//
// The runtime decides before the entry's extension: a node server whose
// entry setting names a .py file still loads JavaScript.
func scriptLang(full string, l launchArgs, runtime string, source bool) (string, []string) {
	ext := strings.ToLower(filepath.Ext(full))
	switch {
	case isPython(l, runtime):
		return "python", pythonCodeFiles
	case source || l.runtime == "bun" || l.runtime == "deno":
		name := l.runtime
		if name == "" {
			name = filepath.Base(runtime)
		}
		return name, sourceCodeFiles
	case l.runtime == "node":
		return "node", nodeCodeFiles
	case ext == ".py" || ext == ".pyc":
		return "python", pythonCodeFiles
	case slices.Contains([]string{".js", ".mjs", ".cjs"}, ext):
		return "node", nodeCodeFiles
	}
	return "", nil
}

// hooksLoader reports whether a node-family launch preloads a module, on
// its command line (l.preloads) or in NODE_OPTIONS or BUN_OPTIONS: a
// require hook or loader may then load files of any extension as code.
func hooksLoader(spec Spec, l launchArgs) bool {
	if len(l.preloads) > 0 {
		return true
	}
	if v, ok := lookupEnvOK(spec, "NODE_OPTIONS"); ok && len(preloadFiles(splitNodeOptions(v), nodePreloadFlags, "/")) > 0 {
		return true
	}
	v, ok := lookupEnvOK(spec, "BUN_OPTIONS")
	return ok && len(preloadFiles(strings.Fields(v), bunPreloadFlags, "/")) > 0
}

// nodeStripsTypes reports whether node, at version (its --version, "v22.18.0"),
// loads .ts, .mts and .cts modules: by default from 22.18 on the 22 line
// and from 23.6 on, unless --no-experimental-strip-types is given; from
// 22.6 with --experimental-strip-types or --experimental-transform-types.
// The options count on its command line (before the script) and in
// NODE_OPTIONS. An unknown version strips types: what it loads cannot be
// told otherwise.
func nodeStripsTypes(spec Spec, l launchArgs, version string) bool {
	opts := l.args
	if i := slices.IndexFunc(opts, func(a string) bool { return !strings.HasPrefix(a, "-") }); i >= 0 {
		opts = opts[:i]
	}
	if v, ok := lookupEnvOK(spec, "NODE_OPTIONS"); ok {
		opts = append(slices.Clip(opts), strings.Fields(v)...)
	}
	has := func(flag string) bool { return slices.Contains(opts, flag) }
	major, minor, ok := nodeVersion(version)
	switch {
	case !ok:
		return true
	case has("--no-experimental-strip-types"):
		return false
	case major > 23 || major == 23 && minor >= 6 || major == 22 && minor >= 18:
		return true
	case major > 22 || major == 22 && minor >= 6:
		return has("--experimental-strip-types") || has("--experimental-transform-types")
	}
	return false
}

// nodeVersion reads "vMAJOR.MINOR.PATCH", node's --version.
func nodeVersion(v string) (major, minor int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || !strings.HasPrefix(v, "v") {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// givenTo reports whether one of the runtime's arguments args names the
// file full (absolute), relative to dir.
func givenTo(dir, full string, args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a != "" && abs(dir, a) == full })
}

// nativeExecutable reports whether the file at p begins as an ELF or
// Mach-O executable does: a compiled program, which carries its own code,
// even when a launcher mcpepoch does not know runs it.
func nativeExecutable(p string) bool {
	if !isRegular(p) {
		return false // a FIFO would block the read
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if n, _ := f.Read(b[:]); n < 4 {
		return false
	}
	for _, m := range [][]byte{{0x7f, 'E', 'L', 'F'}, {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}} {
		if bytes.Equal(b[:], m) {
			return true
		}
	}
	return false
}
