package build

import (
	"io/fs"
	"os"
	"path/filepath"
)

// depRoot is a dependency tree to hash, absolute, and why.
type depRoot struct {
	path string
	why  string
}

// nestedDeps returns the dependency trees the runtime resolves from inside
// the project's own code that the default trees of deps do not cover: a
// node_modules or a .venv's site-packages anywhere inside a code tree
// (dist/node_modules: code trees leave them out, see CodeSkipDirs), and,
// for node and bun, a node_modules in a directory between the entry's and
// dir, and in every directory above dir up to the file system's root (node
// looks for modules in every parent directory's node_modules, the
// project's own parents included). A node_modules inside another is part
// of that tree, not one of its own.
func nestedDeps(dir, entry string, l launchArgs, code []codeInput) []depRoot {
	var out []depRoot
	for _, c := range code {
		root := c.path
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				// A linked node_modules or .venv (a shared install) is
				// one the runtime resolves from too: the code tree
				// leaves the link out (CodeSkipDirs).
				if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
					return nil
				}
			} else if !d.IsDir() {
				return nil
			}
			switch d.Name() {
			case ".git", ".mcpepoch", ".cache":
				return filepath.SkipDir
			case "node_modules":
				if p != root {
					out = append(out, depRoot{path: p, why: "a dependency tree inside the code tree " + display(dir, root) + ": the runtime resolves modules from it"})
				}
				return filepath.SkipDir
			case ".venv":
				m, _ := filepath.Glob(filepath.Join(p, "lib", "python*", "site-packages"))
				for _, sp := range m {
					out = append(out, depRoot{path: sp, why: "the site-packages of a virtual environment inside the code tree " + display(dir, root)})
				}
				return filepath.SkipDir
			}
			return nil
		})
	}
	if entry == "" || (l.runtime != "node" && l.runtime != "bun") {
		return out
	}
	full := abs(dir, entry)
	if !inside(dir, full) || inDeps(Spec{}, dir, full) {
		return out
	}
	for d := filepath.Dir(full); d != dir && inside(dir, d); d = filepath.Dir(d) {
		nm := filepath.Join(d, "node_modules")
		if fi, err := os.Stat(nm); err == nil && fi.IsDir() {
			out = append(out, depRoot{path: nm, why: "a node_modules between the entry and the project root: " + l.runtime + " resolves modules from it"})
		}
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		nm := filepath.Join(d, "node_modules")
		if fi, err := os.Stat(nm); err == nil && fi.IsDir() {
			out = append(out, depRoot{path: nm, why: "a node_modules above the project root: " + l.runtime + " resolves a module the project lacks from it"})
		}
		if filepath.Dir(d) == d {
			return out
		}
	}
}
