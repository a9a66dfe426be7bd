package build

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Files a redirecting variable names. NODE_OPTIONS="--require
// /x/preload.js" makes node load that file before the entry, and
// LD_PRELOAD=/x/libhook.so makes the dynamic loader map that library into
// the server before its own code: hashing the value alone would let the
// file change unseen. The value stays out of the identity (it may hold
// anything): the bytes of the files it names are folded into the
// variable's digest, so rebuilding one changes $NODE_OPTIONS or
// $LD_PRELOAD. Directories a variable adds to a search path (NODE_PATH,
// PYTHONPATH) are dependency trees instead: see envdirs.go.

// bunPreloadFlags are the options of BUN_OPTIONS that name a module bun
// loads before the entry (bun --help: -r/--preload, and the aliases
// --require and --import).
var bunPreloadFlags = []string{"-r", "--preload", "--require", "--import"}

// envNamedFiles returns the files the value v of variable name makes the
// runtime or the dynamic loader load, absolute (relative ones against
// dir, the server's working directory):
//   - NODE_OPTIONS: the modules of -r, --require, --import, --loader and
//     --experimental-loader that are paths (NODE_OPTIONS split as node
//     does, quotes grouping); BUN_OPTIONS: those of -r, --preload,
//     --require and --import (split on white space: bun 1.4 takes quotes
//     literally, and then loads nothing). A package name is loaded from
//     the dependency trees, hashed already.
//   - LD_PRELOAD (entries split on spaces and colons, as ld.so does) and
//     LD_AUDIT (colons): a path as written; a bare name (libhook.so) as
//     the loader finds it, approximately: the first LD_LIBRARY_PATH
//     directory, then system library directory (systemLibDirs), that
//     holds it; when none does, the first place it would be looked for,
//     which is recorded as missing.
//   - DYLD_INSERT_LIBRARIES (colons): each path.
func envNamedFiles(spec Spec, name, v, dir string) []string {
	switch name {
	case "NODE_OPTIONS":
		return preloadFiles(splitNodeOptions(v), nodePreloadFlags, dir)
	case "BUN_OPTIONS":
		return preloadFiles(strings.Fields(v), bunPreloadFlags, dir)
	case "LD_PRELOAD":
		return libraryFiles(spec, strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' || r == '\t' || r == '\n' }), dir)
	case "LD_AUDIT":
		return libraryFiles(spec, strings.Split(v, ":"), dir)
	case "DYLD_INSERT_LIBRARIES":
		var out []string
		for _, p := range strings.Split(v, ":") {
			if p != "" {
				out = append(out, abs(dir, p))
			}
		}
		return out
	}
	return nil
}

// preloadFiles returns the paths among the values of flags in words
// (--flag VALUE or --flag=VALUE), absolute against dir.
func preloadFiles(words, flags []string, dir string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		flag, val, has := strings.Cut(words[i], "=")
		if !slices.Contains(flags, flag) {
			continue
		}
		if !has {
			if i+1 >= len(words) {
				break
			}
			i++
			val = words[i]
		}
		if isPathSpec(val) {
			out = append(out, abs(dir, strings.TrimPrefix(strings.TrimPrefix(val, "file://"), "file:")))
		}
	}
	return out
}

// libraryFiles resolves the libraries of a loader variable: an entry with
// a slash is a path (relative to dir, the server's working directory), a
// bare name is searched in LD_LIBRARY_PATH, then systemLibDirs.
func libraryFiles(spec Spec, entries []string, dir string) []string {
	var search []string
	for _, d := range strings.FieldsFunc(lookupEnv(spec, "LD_LIBRARY_PATH"), func(r rune) bool { return r == ':' || r == ';' }) {
		search = append(search, abs(dir, d))
	}
	search = append(search, systemLibDirs()...)
	var out []string
	for _, e := range entries {
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			out = append(out, abs(dir, e))
		default:
			found := filepath.Join(search[0], e)
			for _, d := range search {
				if c := filepath.Join(d, e); isRegular(c) {
					found = c
					break
				}
			}
			out = append(out, found)
		}
	}
	return out
}

// systemLibDirs are the directories the dynamic loader searches for a
// bare library name after LD_LIBRARY_PATH, in the order of a Debian or
// Fedora system's ld.so.cache and defaults: the multiarch directories,
// /usr/local/lib, then lib64 and lib.
func systemLibDirs() []string {
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu", "arm": "arm-linux-gnueabihf", "riscv64": "riscv64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu"}[runtime.GOARCH]
	var dirs []string
	if triplet != "" {
		dirs = append(dirs, "/usr/local/lib/"+triplet, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(dirs, "/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// splitNodeOptions splits NODE_OPTIONS as node does: on spaces, with
// double quotes grouping and a backslash escaping inside them.
func splitNodeOptions(v string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quoted && c == '\\' && i+1 < len(v):
			i++
			cur.WriteByte(v[i])
		case c == '"':
			quoted, in = !quoted, true
		case c == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// envFilesInput is what the digest of variable value v covers when v
// names files (envNamedFiles): v, then each file's path and digest,
// "missing" when it does not exist or cannot be read, or "not a regular
// file" (a FIFO is never read). The file cache is not used: it would
// keep the paths, which are the value.
func envFilesInput(v string, files []string) []byte {
	b := []byte(v)
	for _, f := range files {
		b = append(b, 0)
		b = append(b, f...)
		b = append(b, 0)
		if fi, err := os.Stat(f); err == nil && !fi.Mode().IsRegular() {
			b = append(b, "not a regular file"...)
		} else if d, _, err := FileDigest(f); err == nil {
			b = append(b, d...)
		} else {
			b = append(b, "missing"...)
		}
	}
	return b
}

// envFilesWhy says, for people, what the digest of variable name covers
// when its value names files.
func envFilesWhy(name string) string {
	switch name {
	case "LD_PRELOAD", "DYLD_INSERT_LIBRARIES":
		return "redirects which code runs: the libraries it names are loaded into the server before its own code, and their bytes are hashed into its digest; value not recorded"
	case "LD_LIBRARY_PATH":
		return "redirects which code runs: the libraries the server's binary needs that the loader finds in its directories are hashed into its digest (not those it opens itself); value not recorded"
	case "LD_AUDIT":
		return "redirects which code runs: the audit libraries it names are loaded by the dynamic loader, and their bytes are hashed into its digest; value not recorded"
	}
	return "redirects which code runs: the files it names are loaded before the entry, and their bytes are hashed into its digest; value not recorded"
}
