package build

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// rootCode returns the code an entry at the project root loads from there,
// when no code tree is inferred (the whole root is never hashed by
// default): the entry's sibling source files of its runtime's language,
// not recursive (.py for python; .js, .mjs and .cjs for node and bun), and
// for python its sourceless modules (sourcelessModule), the package
// directories beside it (those with an __init__.py, as trees) and the
// root's __pycache__ (of which only the bytecode of those siblings that
// Python loads is hashed, see pycRules).
// Node resolves nothing else from there by itself: a directory
// it requires is named in code in mcpepoch.toml. It notes in id what it
// hashed.
func rootCode(dir, entry string, l launchArgs, runtime string) ([]codeInput, string) {
	full := abs(dir, entry)
	if filepath.Dir(full) != dir {
		return nil, ""
	}
	var exts map[string]bool
	lang := rootLang(full, l, runtime)
	switch lang {
	case "python":
		exts = map[string]bool{".py": true}
	case "node":
		exts = map[string]bool{".js": true, ".mjs": true, ".cjs": true}
	default:
		return nil, ""
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, ""
	}
	var files, pkgs []string
	var out []codeInput
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case p == full:
		case e.Type().IsRegular() && exts[strings.ToLower(filepath.Ext(e.Name()))]:
			files = append(files, e.Name())
			out = append(out, codeInput{path: p, why: "a " + lang + " module beside the entry at the project root (its siblings are hashed, not the root's subdirectories)"})
		case lang == "python" && e.Type().IsRegular() && sourcelessModule(dir, e.Name()):
			files = append(files, e.Name())
			out = append(out, codeInput{path: p, why: "a sourceless python module beside the entry at the project root: with no .py of its name, Python imports this .pyc"})
		case lang == "python" && e.IsDir() && e.Name() == "__pycache__":
			out = append(out, codeInput{path: p, why: "the bytecode of the modules at the project root that Python loads"})
		case lang == "python" && e.IsDir() && isRegular(filepath.Join(p, "__init__.py")):
			pkgs = append(pkgs, e.Name())
			out = append(out, codeInput{path: p, why: "a package beside the entry at the project root, which python imports from there"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	note := fmt.Sprintf("code: %s lies in the project root, which is not hashed whole: its %d sibling %s file(s) %q", entry, len(files), lang, files)
	if lang == "python" {
		note += fmt.Sprintf(" and the package directories %q beside it (with __init__.py; namespace packages are not) and the bytecode Python loads from the root's __pycache__", pkgs)
	}
	return out, note + " are code (name more in code in mcpepoch.toml)"
}

// sourcelessModule reports whether the file name in dir is a .pyc Python
// imports from there as a module: x.pyc with no x.py beside it and no
// package directory x (importlib's FileFinder tries a package, then
// x.py, then x.pyc; The Python Language Reference, 5.5 "The path based
// finder"; PEP 3147 keeps this legacy location for sourceless imports).
func sourcelessModule(dir, name string) bool {
	stem, ok := strings.CutSuffix(name, ".pyc")
	if !ok || stem == "" || strings.Contains(stem, ".") {
		return false
	}
	pkg := filepath.Join(dir, stem)
	return !isRegular(pkg+".py") && !isRegular(filepath.Join(pkg, "__init__.py")) && !isRegular(filepath.Join(pkg, "__init__.pyc"))
}

// rootLang names the language of the entry full (absolute) as its
// runtime loads it: "python", "node" (node, bun, or a .js entry), or ""
// when neither.
func rootLang(full string, l launchArgs, runtime string) string {
	ext := strings.ToLower(filepath.Ext(full))
	switch {
	case isPython(l, runtime) || ext == ".py":
		return "python"
	case l.runtime == "node" || l.runtime == "bun" || slices.Contains(codeExts, ext) && !slices.Contains(sourceExts, ext):
		return "node"
	}
	return ""
}
