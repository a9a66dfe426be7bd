package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxNesting is the deepest nesting of arrays and inline tables Load
// decodes. The TOML decoder has no bound of its own and spends time and
// memory in proportion to the depth: a file of 400,000 nested arrays, well
// under MaxSize, takes seconds and hundreds of MB to refuse.
const MaxNesting = 64

// checkNesting scans src for '[' and '{' outside strings and comments and
// reports, with its line, the first one that opens a level past MaxNesting.
// It does not validate the syntax: the decoder does that afterwards.
func checkNesting(src []byte) (line int, err error) {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end, nl := skipString(src, i)
			line += nl
			i = end
		case '[', '{':
			depth++
			if depth > MaxNesting {
				return line, fmt.Errorf("arrays or inline tables nested more than %d deep", MaxNesting)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0, nil
}

// skipString returns the index of the last byte of the string that starts
// at src[i] (a basic or literal string, one-line or multi-line) and the
// number of newlines in it. An unterminated string runs to the end.
func skipString(src []byte, i int) (end, newlines int) {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	j := i + 1
	if triple {
		j = i + 3
	}
	for ; j < len(src); j++ {
		switch src[j] {
		case '\n':
			newlines++
			if !triple {
				return j - 1, newlines - 1 // let the caller count it
			}
		case '\\':
			if q == '"' {
				if j+1 < len(src) && src[j+1] == '\n' {
					newlines++
				}
				j++
			}
		case q:
			if !triple {
				return j, newlines
			}
			if j+2 < len(src) && src[j+1] == q && src[j+2] == q {
				// A closing """ may be followed by up to two more quotes
				// that belong to the content.
				j += 2
				for j+1 < len(src) && src[j+1] == q {
					j++
				}
				return j, newlines
			}
		}
	}
	return len(src) - 1, newlines
}

// pseudoFS are trees of the kernel's making, not code: hashing them reads
// files that change under the reader or never end.
var pseudoFS = []string{"/proc", "/sys", "/dev"}

// checkCode refuses a code entry that names the filesystem root or lies in
// a pseudo filesystem, or that contains the project root (an ancestor of
// it: "..", /home) or the user's home directory, symbolic links resolved
// where the path exists: such a tree is not the project's code, and
// walking it takes minutes on every build or fails on a file unrelated to
// the project. The project root itself (code = ["."]) is allowed, and so is
// a tree beside the project (a monorepo's shared code, which doctor notes).
func checkCode(dir string, code []string) error {
	root := resolved(dir)
	home, _ := os.UserHomeDir()
	if home != "" {
		home = resolved(home)
	}
	for _, c := range code {
		p := c
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = resolved(p)
		if p == string(filepath.Separator) {
			return fmt.Errorf("%q is the filesystem root: name the project's own code trees (code = [\"src\"]), or code = [] to hash none", c)
		}
		for _, fs := range pseudoFS {
			if within(fs, p) {
				return fmt.Errorf("%q is in %s, a pseudo filesystem, not code: name the project's own code trees", c, fs)
			}
		}
		switch {
		case p == root:
		case within(p, root):
			return fmt.Errorf("%q is %s, which contains the project root %s: every build would walk all of it; name the project's own code trees inside it (code = [\"src\"])", c, p, root)
		case home != "" && within(p, home):
			return fmt.Errorf("%q is %s, which contains the home directory %s: every build would walk it; name the code trees the server loads", c, p, home)
		}
	}
	return nil
}

// within reports whether p is dir or lies below it (both clean).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// resolved is p cleaned, with symbolic links resolved when it exists.
func resolved(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// CodeOutside returns the entries of code (as written) that lie outside
// the project at dir, symbolic links resolved, neither containing it nor
// refused by Load: trees beside the project, hashed on every build.
func CodeOutside(dir string, code []string) []string {
	root := resolved(dir)
	var out []string
	for _, c := range code {
		p := c
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if p = resolved(p); !within(root, p) && !within(p, root) {
			out = append(out, c)
		}
	}
	return out
}
