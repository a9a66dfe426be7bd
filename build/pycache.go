package build

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// pycFormat is the first line of the listing a bytecode artifact's digest
// is computed over (see bytecodeArtifact).
const pycFormat = "mcpepoch-pyc-v1"

// maxPyc bounds the size of a .pyc read for its digest.
const maxPyc = 64 << 20

// pycRules say which files of a __pycache__ directory a Python server
// loads, after the import system's rules (The Python Language Reference,
// "The import system", 5.5.x "Cached bytecode invalidation"; PEP 3147,
// PEP 488, PEP 552):
//   - for a module x.py, Python looks only for
//     __pycache__/x.<cache tag>[.opt-N].pyc: the tag of the interpreter
//     (sys.implementation.cache_tag, "cpython-312") and the optimization
//     level (-O, -OO, PYTHONOPTIMIZE); other tags, such as pytest's
//     rewritten "cpython-312-pytest-8.3.2", are never loaded;
//   - a .pyc in __pycache__ without its x.py beside the directory is never
//     loaded (a sourceless module is x.pyc beside the other sources, with
//     no x.py: a code tree hashes it as a file);
//   - a timestamp-based .pyc is loaded only when its header's mtime and
//     size are the source's; a hash-based one (PEP 552) whenever present
//     (unchecked) or when its source hash matches (checked, not computed
//     here: counted);
//   - the script Python runs as __main__ by its path ("python3 server.py")
//     is compiled from source, never from __pycache__; "python3 -m x" and a
//     directory's __main__.py go through the import system and load it;
//   - with a pycache prefix (PYTHONPYCACHEPREFIX, -X pycache_prefix)
//     Python reads bytecode from there, never from __pycache__.
//
// PYTHONDONTWRITEBYTECODE and -B stop writes only: a .pyc present is read.
type pycRules struct {
	tag  string // cache tag; empty when unknown: any single-word tag
	opt  string // "", ".opt-1" or ".opt-2"
	main string // absolute path of the __main__ script run by path, or ""
	// prefix is set when a pycache prefix is in effect: no __pycache__
	// directory is read.
	prefix bool
}

// newPycRules returns the rules of the Python server that l, runtime and
// its version describe, entry being the file it runs first; nil when the
// server is not a Python one.
func newPycRules(spec Spec, dir, entry, runtime, version string, l launchArgs) *pycRules {
	if !isPython(l, runtime) && !strings.EqualFold(filepath.Ext(entry), ".py") {
		return nil
	}
	r := &pycRules{tag: cacheTag(runtime, version)}
	level := l.optimize
	if !l.ignoreEnv {
		if v, ok := lookupEnvOK(spec, "PYTHONOPTIMIZE"); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				n = 1 // CPython reads a value that is no number as -O
			}
			level = max(level, n)
		}
		// PYTHONPYCACHEPREFIX is emptied for the server (pythonBytecode):
		// it reads __pycache__.
	}
	r.prefix = l.pycachePrefix
	switch {
	case level == 1:
		r.opt = ".opt-1"
	case level >= 2:
		r.opt = ".opt-2"
	}
	e := abs(dir, entry)
	if entry != "" && l.module == "" && (l.script != "" && abs(dir, l.script) == e || !l.known && strings.EqualFold(filepath.Ext(e), ".py")) {
		r.main = e
	}
	return r
}

// cacheTag is CPython's cache tag for a runtime named python* whose
// version is "Python X.Y[.Z]": "cpython-XY"; empty otherwise (PyPy,
// GraalPy, an unknown version).
func cacheTag(runtime, version string) string {
	if !isPythonName(filepath.Base(runtime)) {
		return ""
	}
	v, ok := strings.CutPrefix(version, "Python ")
	if !ok {
		return ""
	}
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(major); err != nil {
		return ""
	}
	if _, err := strconv.Atoi(minor); err != nil {
		return ""
	}
	return "cpython-" + major + minor
}

// pycFile is one .pyc Python loads: its path relative to the tree, the
// digest of its code (the bytes after the 16-byte header, so that a
// recompile of unchanged source that only moves the header's mtime is no
// change) and its size.
type pycFile struct {
	rel    string
	digest Digest
	size   int64
	stamp  Digest // fileStamp, for Artifact.stamp
}

// loaded returns the .pyc files of the __pycache__ directory pc that
// Python loads, their paths relative to root.
func (r *pycRules) loaded(root, pc string) ([]pycFile, error) {
	if r.prefix {
		return nil, nil
	}
	ents, err := os.ReadDir(pc)
	if err != nil {
		return nil, err
	}
	var out []pycFile
	for _, e := range ents {
		src, ok := r.source(pc, e.Name())
		if !ok || !e.Type().IsRegular() || src == r.main {
			continue
		}
		sfi, err := os.Stat(src)
		if err != nil || !sfi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(pc, e.Name())
		b, err := safefile.ReadFile(p, maxPyc)
		if err != nil {
			return nil, err
		}
		if !pycValid(b, sfi) {
			continue
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, pycFile{rel: filepath.ToSlash(rel), digest: DigestBytes(b[16:]), size: int64(len(b)), stamp: fileStamp(p)})
	}
	return out, nil
}

// source returns the source file whose bytecode name is in the
// __pycache__ directory pc, when the name is one Python looks for under
// r: x.<tag><opt>.pyc for x.py beside pc.
func (r *pycRules) source(pc, name string) (string, bool) {
	base, ok := strings.CutSuffix(name, r.opt+".pyc")
	if !ok {
		return "", false
	}
	stem, tag, ok := strings.Cut(base, ".")
	if !ok || stem == "" || tag == "" || strings.Contains(tag, ".") || r.tag != "" && tag != r.tag {
		return "", false
	}
	return filepath.Join(filepath.Dir(pc), stem+".py"), true
}

// pycValid reports whether the .pyc b passes the checks Python makes
// against its source src before it loads it: a 16-byte header, and for a
// timestamp-based .pyc (flags 0) the source's mtime and size, each modulo
// 2^32. The magic number is not checked (a .pyc of another release would
// be counted though Python ignores it).
func pycValid(b []byte, src fs.FileInfo) bool {
	if len(b) < 16 {
		return false
	}
	if binary.LittleEndian.Uint32(b[4:8])&1 != 0 {
		return true // hash-based
	}
	mtime := uint32(src.ModTime().Unix())
	size := uint32(src.Size())
	return binary.LittleEndian.Uint32(b[8:12]) == mtime && binary.LittleEndian.Uint32(b[12:16]) == size
}

// bytecodeArtifact returns the bytecode Python loads from the tree at
// full: its __pycache__ directories at every depth (CodeSkipDirs left
// out), or only full itself when full is a __pycache__ directory. The
// digest is the SHA-256 of the listing
//
//	mcpepoch-pyc-v1
//	<path> sha256:<64 hex>
//
// one line per .pyc loaded, sorted by path (slash-separated, relative to
// full's parent for a __pycache__, else to full), the digest being of its
// code. ok is false when no .pyc is loaded.
func bytecodeArtifact(dir, full string, r *pycRules) (a Artifact, ok bool, err error) {
	var files []pycFile
	if filepath.Base(full) == "__pycache__" {
		files, err = r.loaded(filepath.Dir(full), full)
	} else {
		err = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.Name() == "__pycache__" && d.Type()&fs.ModeSymlink != 0:
				// Python reads a linked __pycache__ as a directory; the
				// code tree leaves the link out.
				f, err := r.loaded(full, p)
				files = append(files, f...)
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					return nil
				}
				return err
			case !d.IsDir():
				return nil
			case d.Name() == "__pycache__":
				f, err := r.loaded(full, p)
				files = append(files, f...)
				if err != nil {
					return err
				}
				return filepath.SkipDir
			case p != full && slices.Contains(CodeSkipDirs, d.Name()):
				return filepath.SkipDir
			}
			return nil
		})
	}
	if err != nil {
		return Artifact{}, false, &InputError{Field: string(RoleCode), Path: display(dir, full), Err: err}
	}
	if len(files) == 0 {
		return Artifact{}, false, nil
	}
	slices.SortFunc(files, func(x, y pycFile) int { return strings.Compare(x.rel, y.rel) })
	h, st := sha256.New(), sha256.New()
	fmt.Fprintln(h, pycFormat)
	a = Artifact{Role: RoleCode, Files: len(files)}
	for _, f := range files {
		fmt.Fprintf(h, "%s %s\n", f.rel, f.digest)
		fmt.Fprintf(st, "%s %s\n", f.rel, f.stamp)
		a.Size += f.size
	}
	a.Digest, a.stamp = NewDigest(h), NewDigest(st)
	return a, true, nil
}
