package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// CodeSkipDirs are directory names left out of code trees: tool caches
// and state (go-task's .task, whose checksum files every task run
// rewrites), and directories that are dependency trees (hashed as such, see
// nestedDeps), version control or mcpepoch's own files rather than the
// project's code. Python's __pycache__ is not among them: a Python
// server's code trees leave it out of the tree and hash, as an artifact
// of its own, only the bytecode Python loads from there (pycRules); other
// servers' trees hash it as files.
var CodeSkipDirs = []string{".cache", "node_modules", ".venv", ".git", ".mcpepoch", ".task"}

// codeInput is a code tree or file to hash.
type codeInput struct {
	path string // absolute
	why  string
	// named is set for what mcpepoch.toml names: when it does not exist,
	// it is recorded missing rather than an error (a deleted file is a
	// change, reported as gone).
	named bool
	// only is the tree's TreeOptions.OnlyFiles (the files a script's
	// runtime loads as code, see projectCode); nil: every file.
	only []string
}

// lists reports whether the tree c lists the regular file full: it lies
// in it, below no directory a code tree leaves out (CodeSkipDirs), and
// c.only lists its extension or name. A file that does not exist is not
// listed, so that a missing preload is named as itself.
func (c codeInput) lists(full string) bool {
	if !inside(c.path, full) || !isRegular(full) {
		return false
	}
	rel, _ := filepath.Rel(c.path, full)
	for _, part := range strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/") {
		if slices.Contains(CodeSkipDirs, part) {
			return false
		}
	}
	name := filepath.Base(full)
	return c.only == nil || slices.Contains(c.only, name) || slices.Contains(c.only, strings.ToLower(filepath.Ext(name)))
}

// inferCode returns the project's own code the runtime loads besides the
// entry (seed: "if the runtime loads code the lockfile does not cover,
// include the resolved tree"): spec.Code when set; else the whole project
// when what the launch runs cannot be followed, the source a "go run"
// compiles (its module), or the project tree a script entry can load code
// from (projectCode), and the files node preloads. It notes in id what it inferred, and sets
// id.Source for a server that runs from source.
func inferCode(spec Spec, dir, entry, runtime string, l launchArgs, id *Identity) []codeInput {
	if spec.Code != nil {
		var out []codeInput
		for _, c := range spec.Code {
			out = append(out, codeInput{path: abs(dir, c), why: "named in code in mcpepoch.toml: the project's own code the runtime loads", named: true})
		}
		return out
	}
	if id.unfollowed != "" {
		id.Inferred = append(id.Inferred, "code: the whole project, since what "+id.unfollowed+" loads cannot be told (name the code in code in mcpepoch.toml)")
		return []codeInput{{path: dir, why: "the project: the launch runs a command line that cannot be followed to its code (" + id.unfollowed + ")"}}
	}
	if l.goRun != nil {
		return goRunSource(dir, l, id)
	}
	var out []codeInput
	source := entry != "" && slices.Contains(sourceExts, strings.ToLower(filepath.Ext(entry)))
	if c, ok := projectCode(spec, dir, entry, runtime, l, source, id); ok {
		out = append(out, c)
		if source {
			id.Source = fmt.Sprintf("the server runs from source (%s): the project's source files are hashed, not a build output", entry)
		}
	} else if source {
		id.Source = fmt.Sprintf("the server runs from source (%s): only that file is hashed (name the tree it imports in code in mcpepoch.toml)", entry)
	}
	for _, p := range l.preloads {
		if !isPathSpec(p.spec) {
			id.Inferred = append(id.Inferred, fmt.Sprintf("preload %s %s: a package, part of the dependency trees", p.flag, p.spec))
			continue
		}
		full := abs(dir, strings.TrimPrefix(p.spec, "file://"))
		if slices.ContainsFunc(out, func(c codeInput) bool { return c.lists(full) }) {
			id.Inferred = append(id.Inferred, fmt.Sprintf("preload %s %s: inside the code tree already hashed", p.flag, p.spec))
			continue
		}
		out = append(out, codeInput{path: full, why: fmt.Sprintf("a module %s loads before the entry (%s)", l.runtime, p.flag)})
	}
	return out
}

// goRunSource returns the module "go run" compiles: the directory holding
// the go.mod above its package, else the package directory.
func goRunSource(dir string, l launchArgs, id *Identity) []codeInput {
	pkg := l.goRun[0]
	if strings.HasSuffix(pkg, ".go") {
		pkg = filepath.Dir(pkg)
	}
	if !isPathSpec(pkg) && !filepath.IsAbs(pkg) && !strings.HasSuffix(l.goRun[0], ".go") {
		id.Source = "the server runs from source (go run " + pkg + "), a package outside the project: its source is not hashed"
		return nil
	}
	p := abs(dir, pkg)
	root := p
	for d := p; ; d = filepath.Dir(d) {
		if isRegular(filepath.Join(d, "go.mod")) {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	id.Source = fmt.Sprintf("the server runs from source (go run %s): the module %s is compiled at each launch, its source tree is hashed", strings.Join(l.goRun, " "), display(dir, root))
	return []codeInput{{path: root, why: "the Go source go run compiles at each launch"}}
}

// inDeps reports whether p lies in a dependency tree: node_modules or a
// .venv anywhere, or one of spec.Deps.
func inDeps(spec Spec, dir, p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == "node_modules" || part == ".venv" {
			return true
		}
	}
	for _, d := range spec.Deps {
		if inside(abs(dir, d), p) {
			return true
		}
	}
	return false
}

// inside reports whether p is root or lies below it (both clean).
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// hashCode hashes the code inputs into id.Code: a directory as a tree (the
// TreeDigest of deps, with a stat cache of its own), a file as a file.
// A tree leaves out the entry, an input of its own, so that a change of the
// entry alone is named as the entry. For a Python server (py set) a tree
// leaves out its __pycache__ directories, and the bytecode Python loads
// from them is an artifact of its own (hashBytecode). Missing inputs are
// errors unless missingOK.
func hashCode(spec Spec, dir, entry string, fc *FileCache, in []codeInput, missingOK bool, py *pycRules, id *Identity) error {
	for _, c := range in {
		var skip []string
		if py != nil && filepath.Base(c.path) == "__pycache__" {
			if err := hashBytecode(dir, c, py, id); err != nil {
				return err
			}
			continue
		}
		fi, err := os.Stat(c.path)
		var a Artifact
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist) && (missingOK || c.named):
			a, err = Artifact{Role: RoleCode, Path: display(dir, c.path), Missing: true}, nil
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return &InputError{Field: string(RoleCode), Path: display(dir, c.path), Err: err}
		case fi.IsDir():
			// The entry, and wrappers, configuration files and a runtime
			// inside the tree, are inputs of their own: a change of one is
			// named as itself.
			own := []string{abs(dir, entry)}
			for _, w := range append(slices.Clip(id.Wrappers), id.Config...) {
				own = append(own, abs(dir, filepath.FromSlash(w.Path)))
			}
			if id.Runtime.Path != "" {
				own = append(own, abs(dir, filepath.FromSlash(id.Runtime.Path)))
			}
			for i, e := range own {
				if (i > 0 || entry != "") && e != c.path && inside(c.path, e) {
					rel, _ := filepath.Rel(c.path, e)
					if r := filepath.ToSlash(rel); !slices.Contains(skip, r) {
						skip = append(skip, r)
					}
				}
			}
			skipDirs := CodeSkipDirs
			if py != nil {
				skipDirs = append(slices.Clip(CodeSkipDirs), "__pycache__")
			}
			a, _, err = treeArtifact(spec, dir, c.path, RoleCode, TreeOptions{SkipDirs: skipDirs, SkipFiles: skip, OnlyFiles: c.only}, id)
		default:
			a, err = artifact(fc, RoleCode, dir, c.path, false)
		}
		if err != nil {
			return err
		}
		a.Why = c.why
		addCode(id, a)
		if py != nil && fi != nil && fi.IsDir() {
			watchPycache(spec, c.path, skip, c.only, id)
			if err := hashBytecode(dir, c, py, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchPycache asks the host's tree watcher (spec.Trees with spec.Caches:
// a host) for the Python code tree at full with its __pycache__
// directories, so that a .pyc written while an epoch runs, in a
// __pycache__ that exists or one made then, marks the identity to be
// computed again (host drift) as a saved source does. The tree's digest
// is not an input: the bytecode Python loads is (hashBytecode). only is
// the code tree's OnlyFiles (pythonCodeFiles has .pyc). A hook
// (no spec.Caches) does not walk it.
func watchPycache(spec Spec, full string, skip, only []string, id *Identity) {
	if spec.Trees == nil || spec.Caches == nil {
		return
	}
	opt := TreeOptions{SkipDirs: CodeSkipDirs, SkipFiles: skip, OnlyFiles: only}
	_, _ = spec.Trees(full, opt, func() (Tree, error) { return walkTree(spec, full, RoleCode, opt, id) })
}

// addCode appends a to id.Code unless an artifact of its path is there.
func addCode(id *Identity, a Artifact) {
	if !slices.ContainsFunc(id.Code, func(o Artifact) bool { return o.Path == a.Path }) {
		id.Code = append(id.Code, a)
	}
}

// hashBytecode adds to id.Code the bytecode Python loads from the code
// tree c (its __pycache__ directories) or from c itself when it is a
// __pycache__ directory, labelled "TREE/**/__pycache__" or its path;
// nothing when Python loads none.
func hashBytecode(dir string, c codeInput, py *pycRules, id *Identity) error {
	a, ok, err := bytecodeArtifact(dir, c.path, py)
	if err != nil || !ok {
		return err
	}
	a.Path = display(dir, c.path)
	if filepath.Base(c.path) != "__pycache__" {
		a.Path = strings.TrimPrefix(a.Path+"/**/__pycache__", "./")
	}
	a.Why = "the bytecode Python loads from there instead of its modules' source: a .pyc of this interpreter's cache tag whose header matches its source " +
		"(never the __main__ script's own, which Python compiles from source)"
	addCode(id, a)
	return nil
}

// treeArtifact digests the tree at full (absolute) as an artifact of role,
// with its stat cache (spec.Caches, spec.CacheDir) or through spec.Trees.
func treeArtifact(spec Spec, dir, full string, role Role, opt TreeOptions, id *Identity) (Artifact, Tree, error) {
	walk := func() (Tree, error) { return walkTree(spec, full, role, opt, id) }
	var t Tree
	var err error
	if spec.Trees != nil {
		t, err = spec.Trees(full, opt, walk)
	} else {
		t, err = walk()
	}
	if err != nil {
		return Artifact{}, Tree{}, &InputError{Field: string(role), Path: display(dir, full), Err: err}
	}
	return Artifact{Role: role, Path: display(dir, full), Digest: t.Digest, Size: t.Bytes, Files: t.Files, Native: len(t.NativeAddons), stamp: t.Stamp}, t, nil
}

// walkTree is TreeDigest of full with the stat cache spec.Caches keeps for
// it when set, else with its stat cache in spec.CacheDir when set, noting
// in id a cache that could not be used.
func walkTree(spec Spec, full string, role Role, opt TreeOptions, id *Identity) (Tree, error) {
	if spec.Caches != nil {
		opt.Rehash = spec.Rehash
		return spec.Caches.walk(full, role, opt)
	}
	var cache *StatCache
	var cachePath string
	if spec.CacheDir != "" {
		cachePath = filepath.Join(spec.CacheDir, cacheName(full, role))
		c, err := LoadStatCache(cachePath)
		if err != nil {
			// Named once: a corrupt cache's error starts with its path.
			why := strings.TrimPrefix(err.Error(), "stat cache "+cachePath+": ")
			id.Inferred = append(id.Inferred, fmt.Sprintf("stat cache %s ignored: %s", cachePath, why))
		}
		cache = c
	}
	opt.Cache, opt.Rehash = cache, spec.Rehash
	t, err := TreeDigest(full, opt)
	if err != nil {
		return Tree{}, err
	}
	if cache != nil && cache.Dirty() {
		if err := cache.Save(cachePath); err != nil {
			id.Inferred = append(id.Inferred, fmt.Sprintf("stat cache %s not saved: %v", cachePath, err))
		}
	}
	return t, nil
}

// scriptPath resolves the script a runtime was given the way it finds it:
// node and bun try the extensions .js, .mjs, .cjs and a directory's
// package.json "main" or index.js; python runs a directory's __main__.py.
// It returns s itself when nothing exists, so that the caller reports the
// file the command names.
func scriptPath(dir, s string, l launchArgs) string {
	full := abs(dir, s)
	if isRegular(full) {
		return s
	}
	var tries []string
	switch l.runtime {
	case "node", "bun":
		for _, ext := range []string{".js", ".mjs", ".cjs"} {
			tries = append(tries, s+ext)
		}
		if b, err := safefile.ReadFile(filepath.Join(full, "package.json"), 1<<20); err == nil {
			var pj struct {
				Main string `json:"main"`
			}
			if json.Unmarshal(b, &pj) == nil && pj.Main != "" {
				tries = append(tries, filepath.Join(s, pj.Main), filepath.Join(s, pj.Main+".js"))
			}
		}
		tries = append(tries, filepath.Join(s, "index.js"))
	case "python":
		tries = append(tries, filepath.Join(s, "__main__.py"))
	}
	for _, t := range tries {
		if isRegular(abs(dir, t)) {
			return t
		}
	}
	return s
}

// pythonModule finds the file "python -m NAME" runs from the working
// directory (the first entry of sys.path): NAME as a path plus ".py", or
// its __main__.py when it is a package.
func pythonModule(dir, name string) (string, bool) {
	p := filepath.Join(strings.Split(name, ".")...)
	for _, t := range []string{p + ".py", filepath.Join(p, "__main__.py")} {
		if isRegular(filepath.Join(dir, t)) {
			return t, true
		}
	}
	return "", false
}
