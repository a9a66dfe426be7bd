package build

import (
	"slices"
	"strings"
)

// Files a redirecting variable names. NODE_OPTIONS="--require
// /x/preload.js" makes node load that file before the entry; hashing the
// value alone would let the file change unseen. The value stays out of the
// identity (it may hold anything): the bytes of the files it names are
// folded into the variable's digest, so rewriting one changes $NODE_OPTIONS.

// envNamedFiles returns the files the value v of variable name makes the
// runtime load, absolute (relative ones against dir, the server's working
// directory): for NODE_OPTIONS the modules of -r, --require, --import,
// --loader and --experimental-loader that are paths. A package name is
// loaded from the dependency trees, hashed already.
func envNamedFiles(name, v, dir string) []string {
	if name != "NODE_OPTIONS" {
		return nil
	}
	words := splitNodeOptions(v)
	var out []string
	for i := 0; i < len(words); i++ {
		flag, val, has := strings.Cut(words[i], "=")
		if !slices.Contains(nodePreloadFlags, flag) {
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
// names files (envNamedFiles): v, then each file's path and digest, or
// "missing".
func envFilesInput(v string, files []string) []byte {
	b := []byte(v)
	for _, f := range files {
		b = append(b, 0)
		b = append(b, f...)
		b = append(b, 0)
		if d, _, err := FileDigest(f); err == nil {
			b = append(b, d...)
		} else {
			b = append(b, "missing"...)
		}
	}
	return b
}
