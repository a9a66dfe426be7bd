package build

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Directories a search path adds. NODE_PATH=/opt/js makes node's require
// find in /opt/js a module the node_modules do not have, PYTHONPATH=/opt/py
// puts /opt/py on sys.path before site-packages, and node also looks in
// its global folders ($HOME/.node_modules, $HOME/.node_libraries and
// PREFIX/lib/node). Their values are hashed as redirecting variables, but
// the modules are code the server loads: each such directory that exists
// is a dependency tree of the identity (watched by the host like the
// others), unless the project's own trees already cover it.
//
// A search path may name a huge shared folder (a global node_modules, a
// system dist-packages): walking 100,000 files at every hook is not done.
// A directory with more than envTreeLimit entries is hashed shallowly
// (shallowDigest: its top level, each package's manifest) and the
// explanation says so, and how to hash it whole.

// envTreeLimit is the number of entries (files, directories and links,
// counted by reading directories only: about 15 ms for 10,000 on a busy
// machine, paid at each identity while the variable is set) above which
// a search-path directory is hashed shallowly.
const envTreeLimit = 10000

// The work over all search-path directories of one identity is bounded:
// a value of a thousand entries naming big folders would otherwise hold
// every hook and the host's start for minutes. The entries are
// deduplicated by their real path (symbolic links resolved) first; then
// at most envDirLimit directories are looked at, and none is started once
// envWorkFactor*envTreeLimit entries were read (counting, the shallow
// digests' top levels, and the walks, a directory's count twice): at most
// about 70,000 entries in all. The directories past the bound are not
// hashed at all (the variable's value still is) and the explanation says
// so, once, naming the variables and the bound.
const (
	envDirLimit   = 64
	envWorkFactor = 5
)

// envCand is a directory a search path adds, from the variable src.
type envCand struct {
	depRoot
	src string
}

// envCands returns the search-path directories of the server's runtime,
// in search order.
func envCands(spec Spec, dir string, l launchArgs, rt string) []envCand {
	var cands []envCand
	add := func(name, why string) {
		for _, p := range filepath.SplitList(lookupEnv(spec, name)) {
			if p != "" {
				cands = append(cands, envCand{depRoot{abs(dir, p), why}, name})
			}
		}
	}
	switch {
	case l.runtime == "node" || l.runtime == "bun":
		add("NODE_PATH", "a NODE_PATH directory: "+l.runtime+" resolves there a module the node_modules do not have")
		if l.runtime == "node" {
			for _, g := range nodeGlobalFolders(spec, rt) {
				cands = append(cands, envCand{depRoot{g, "one of node's global folders ($HOME/.node_modules, $HOME/.node_libraries, PREFIX/lib/node): node resolves there a module the node_modules and NODE_PATH do not have"}, "node's global folders"})
			}
		}
	case isPython(l, rt):
		add("PYTHONPATH", "a PYTHONPATH directory: on sys.path before site-packages, so the server imports modules from it")
		for _, s := range systemSites(spec, dir, rt) {
			cands = append(cands, envCand{depRoot{s, "the interpreter's own site-packages: on sys.path, and its .pth files run at every start (a virtual environment without system site-packages keeps Python out of it)"}, "the interpreter's site-packages"})
		}
	}
	return cands
}

// envDirs returns the search-path directories of the server's runtime to
// hash as trees, and the artifacts of those hashed shallowly (their files
// read through fc when not nil); what it leaves out is said in
// id.Inferred. code and nested are the trees the identity hashes already.
func envDirs(spec Spec, dir string, l launchArgs, rt string, code []codeInput, nested []depRoot, fc *FileCache, id *Identity) ([]depRoot, []Artifact) {
	limit := envTreeLimit
	if spec.envTreeLimit > 0 {
		limit = spec.envTreeLimit
	}
	var roots, realRoots []depRoot
	var shallow []Artifact
	var past []string // the variables of the directories past the bound
	seen := map[string]bool{}
	looked, work, skipped := 0, 0, 0
	for _, c := range envCands(spec, dir, l, rt) {
		real, err := filepath.EvalSymlinks(c.path)
		if err != nil || seen[real] {
			continue // absent (the variable's value is hashed; a directory made later is new) or seen
		}
		seen[real] = true
		fi, err := os.Stat(real)
		switch {
		case err != nil:
			continue
		case !fi.IsDir():
			if fi.Mode().IsRegular() { // a zip archive on sys.path
				shallow = append(shallow, fileArtifact(dir, c.path, c.why))
			}
			continue
		case coveredBy(dir, c.path, code, nested, roots, spec) || coveredBy(dir, real, code, nested, realRoots, spec):
			continue
		case inside(c.path, dir) || inside(real, dir):
			id.Inferred = append(id.Inferred, fmt.Sprintf("%s contains the project: it is not hashed as a tree (%s); the project's own code is hashed as its code", display(dir, c.path), c.why))
			continue
		case looked >= envDirLimit || work >= envWorkFactor*limit:
			skipped++
			if !slices.Contains(past, c.src) {
				past = append(past, c.src)
			}
			continue
		}
		looked++
		n, over := countEntries(c.path, limit)
		work += n
		if over {
			a := shallowArtifact(fc, dir, c.path, limit)
			a.Why = c.why + fmt.Sprintf("; it has more than %d entries, so only its top level is hashed (each file, each directory's package.json or __init__.py): an edit deeper inside is not seen; name the package's own directory in deps in mcpepoch.toml to hash it whole", limit)
			work += limit
			shallow = append(shallow, a)
			id.Inferred = append(id.Inferred, fmt.Sprintf("%s has more than %d entries: hashed shallowly", display(dir, c.path), limit))
			continue
		}
		work += n // the walk
		roots = append(roots, c.depRoot)
		realRoots = append(realRoots, depRoot{real, c.why})
	}
	if skipped > 0 {
		id.Inferred = append(id.Inferred, fmt.Sprintf("%s: %d more directories not hashed, past the bound of %d directories and %d entries read over all search-path directories; only the variable's value is: name the ones the server needs in deps in mcpepoch.toml", strings.Join(past, ", "), skipped, envDirLimit, envWorkFactor*limit))
	}
	return roots, shallow
}

// fileArtifact is the artifact of the regular file p on a search path.
func fileArtifact(dir, p, why string) Artifact {
	a := Artifact{Role: RoleDeps, Path: display(dir, p), Why: why}
	if d, n, err := FileDigest(p); err == nil {
		a.Digest, a.Size = d, n
	} else {
		a.Missing = true
	}
	return a
}

// coveredBy reports whether p lies in a tree the identity hashes already:
// a code tree, a dependency tree (nested, inDeps) or one of roots.
func coveredBy(dir, p string, code []codeInput, nested, roots []depRoot, spec Spec) bool {
	if inDeps(spec, dir, p) {
		return true
	}
	for _, c := range code {
		if inside(c.path, p) {
			return true
		}
	}
	for _, r := range slices.Concat(nested, roots) {
		if inside(r.path, p) {
			return true
		}
	}
	return false
}

// nodeGlobalFolders returns node's global folders that exist:
// $HOME/.node_modules, $HOME/.node_libraries and PREFIX/lib/node, PREFIX
// being the directory above the one of the node binary rt (symbolic links
// resolved).
func nodeGlobalFolders(spec Spec, rt string) []string {
	var out []string
	if home := lookupEnv(spec, "HOME"); home != "" {
		out = append(out, filepath.Join(home, ".node_modules"), filepath.Join(home, ".node_libraries"))
	}
	if rt != "" {
		if real, err := filepath.EvalSymlinks(rt); err == nil {
			out = append(out, filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "node"))
		}
	}
	return slices.DeleteFunc(out, func(p string) bool {
		fi, err := os.Stat(p)
		return err != nil || !fi.IsDir()
	})
}

// countEntries counts the entries below root (directories named in
// TreeSkipDirs left out, links not followed), reading directories only,
// and stops once the count exceeds limit: over reports that.
func countEntries(root string, limit int) (n int, over bool) {
	stack := []string{root}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		for {
			es, err := f.ReadDir(512)
			for _, e := range es {
				if e.IsDir() && slices.Contains(TreeSkipDirs, e.Name()) {
					continue
				}
				if n++; n > limit {
					f.Close()
					return n, true
				}
				if e.IsDir() {
					stack = append(stack, filepath.Join(d, e.Name()))
				}
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return n, false
}

// shallowArtifact is the artifact of the directory root hashed shallowly
// (shallowDigest).
func shallowArtifact(fc *FileCache, dir, root string, limit int) Artifact {
	d, files, size := shallowDigest(fc, root, limit)
	return Artifact{Role: RoleDeps, Path: display(dir, root), Digest: d, Files: files, Size: size}
}

// shallowDigest hashes the top level of root: the SHA-256 of the lines
// "<type> <name> <digest>\n", sorted by name, of at most limit entries,
// where a regular file's digest is of its content, a directory's that of
// its package.json, else its __init__.py, else "-", and a link's its
// target. It returns the digest, the files read and their bytes. Files
// are read through fc when not nil.
func shallowDigest(fc *FileCache, root string, limit int) (Digest, int, int64) {
	h := sha256.New()
	io.WriteString(h, "mcpepoch-shallow-v1\n")
	f, err := os.Open(root)
	if err != nil {
		return DigestBytes([]byte("unreadable")), 0, 0
	}
	es, _ := f.ReadDir(limit)
	f.Close()
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
	files, size := 0, int64(0)
	for _, e := range es {
		p := filepath.Join(root, e.Name())
		typ, sum := "o", "-"
		switch t := e.Type(); {
		case t&os.ModeSymlink != 0:
			typ = "l"
			sum, _ = os.Readlink(p)
		case t.IsDir():
			typ = "d"
			for _, m := range []string{"package.json", "__init__.py"} {
				if d, n, ok := regularDigest(fc, filepath.Join(p, m)); ok {
					sum, files, size = m+":"+string(d), files+1, size+n
					break
				}
			}
		case t.IsRegular():
			typ = "f"
			if d, n, ok := regularDigest(fc, p); ok {
				sum, files, size = string(d), files+1, size+n
			}
		}
		fmt.Fprintf(h, "%s %q %s\n", typ, e.Name(), sum)
	}
	return sumDigest([sha256.Size]byte(h.Sum(nil))), files, size
}

// regularDigest is the digest and size of p when it is a regular file
// that can be read, through fc when not nil.
func regularDigest(fc *FileCache, p string) (Digest, int64, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", 0, false
	}
	d, n, err := hashFile(fc, p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", 0, false
	}
	return d, n, err == nil
}

// addShallow adds the artifacts of envDirs hashed shallowly to id.Deps,
// keeping them sorted by path.
func addShallow(id *Identity, shallow []Artifact) {
	if len(shallow) == 0 {
		return
	}
	id.Deps = append(id.Deps, shallow...)
	sort.Slice(id.Deps, func(i, j int) bool { return id.Deps[i].Path < id.Deps[j].Path })
}
