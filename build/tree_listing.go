package build

// The tree listing: its lines, their order and text, and the resolution
// of symbolic links that TreeDigest lists.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// treeLine is one line of the listing.
type treeLine struct {
	path   string
	kind   byte // 'f', 'l', 'd' or 'o'
	exec   bool
	size   int64
	sum    [sha256.Size]byte
	target string
}

// listDirs returns the lines of the listing of the walked directories,
// sorted; empties lists the directories with no entry listed (not for a
// tree of TreeOptions.OnlyFiles).
func listDirs(dirs map[string]*dirRecord, empties bool) []*treeLine {
	var lines []*treeLine
	var visit func(rel string)
	visit = func(rel string) {
		d := dirs[rel]
		if d == nil {
			return
		}
		if empties && len(d.kids) == 0 && rel != "" {
			lines = append(lines, &treeLine{path: rel, kind: 'd'})
		}
		for i := range d.kids {
			k := &d.kids[i]
			p := k.name
			if rel != "" {
				p = rel + "/" + k.name
			}
			switch k.kind {
			case 'd':
				visit(p)
			case 'f':
				lines = append(lines, &treeLine{path: p, kind: 'f', exec: k.key.mode&0o111 != 0, size: k.key.size, sum: k.sum})
			case 'l':
				lines = append(lines, &treeLine{path: p, kind: 'l', target: k.target})
				if k.ext != nil {
					lines = append(lines, &treeLine{path: p, kind: 'f', exec: k.ext.key.mode&0o111 != 0, size: k.ext.key.size, sum: k.ext.sum})
				}
				if k.descend {
					visit(p)
				}
			default:
				lines = append(lines, &treeLine{path: p, kind: 'o'})
			}
		}
	}
	visit("")
	slices.SortFunc(lines, compareLines)
	return lines
}

// follow applies the symbolic link rules of TreeDigest to the link at tree
// path rel in directory t. It returns the directory to walk under rel, if
// any, or the regular file outside the tree the link reaches, if any, and
// whether that file was read.
func (wk *treeWorker) follow(t dirTask, rel, target string, prev *kidRecord) (*dirTask, *extFile, bool, error) {
	hops := 0
	real, st, err := resolveLink(t.real, target, &hops)
	if err != nil {
		return nil, nil, false, nil // broken or looping: the link is listed by target only
	}
	for _, r := range t.roots {
		if within(real, r) {
			return nil, nil, false, nil
		}
	}
	switch st.kind {
	case 'd':
		for _, r := range t.roots {
			if within(r, real) {
				return nil, nil, false, nil
			}
		}
		roots := append(slices.Clip(t.roots), real)
		return &dirTask{rel: rel, real: real, st: st, roots: roots}, nil, false, nil
	case 'f':
		if prev != nil && prev.ext != nil && wk.w.trusted(prev.ext.key, st) {
			return nil, prev.ext, false, nil
		}
		ext := &extFile{key: st.key}
		if err := wk.hash(atCWD(), real, real, st.key.size, &ext.sum); err != nil {
			return nil, nil, false, err
		}
		return nil, ext, true, nil
	}
	return nil, nil, false, nil
}

// resolveLink returns the real path a link in the real directory dir with
// the given target reaches, and its lstat data. It resolves one component
// at a time, following links up to maxLinkHops in all.
func resolveLink(dir, target string, hops *int) (string, fileStat, error) {
	*hops++
	if *hops > maxLinkHops {
		return "", fileStat{}, &fs.PathError{Op: "resolve", Path: joinReal(dir, target), Err: syscall.ELOOP}
	}
	cur := dir
	if strings.HasPrefix(target, "/") {
		cur = "/"
	}
	parts := strings.Split(target, "/")
	var st fileStat
	have := false
	for i, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(cur, '/'); i > 0 {
				cur = cur[:i]
			} else {
				cur = "/"
			}
			have = false
			continue
		}
		next := joinReal(cur, p)
		s, err := lstatPath(next)
		if err != nil {
			return "", fileStat{}, err
		}
		if s.kind == 'l' {
			t, err := readlinkPath(next)
			if err != nil {
				return "", fileStat{}, err
			}
			next, s, err = resolveLink(cur, t, hops)
			if err != nil {
				return "", fileStat{}, err
			}
		}
		if i < len(parts)-1 && s.kind != 'd' {
			return "", fileStat{}, &fs.PathError{Op: "resolve", Path: next, Err: syscall.ENOTDIR}
		}
		cur, st, have = next, s, true
	}
	if !have {
		s, err := lstatPath(cur)
		if err != nil {
			return "", fileStat{}, err
		}
		st = s
	}
	return cur, st, nil
}

// joinReal joins a clean absolute directory path and a name.
func joinReal(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

func compareLines(a, b *treeLine) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	rank := func(k byte) int {
		if k == 'l' {
			return 0
		}
		return 1
	}
	return rank(a.kind) - rank(b.kind)
}

// writeListing returns the SHA-256 of the listing of the sorted lines and,
// if keep is set, its text too.
func writeListing(lines []*treeLine, keep bool) ([sha256.Size]byte, []byte) {
	h := sha256.New()
	var kept []byte
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, TreeFormat+"\n"...)
	for _, e := range lines {
		buf = append(buf, e.kind, ' ')
		switch e.kind {
		case 'f':
			if e.exec {
				buf = append(buf, 'x')
			} else {
				buf = append(buf, '-')
			}
			buf = append(buf, " "+Algorithm+":"...)
			buf = hex.AppendEncode(buf, e.sum[:])
		case 'l':
			buf = append(buf, "- "...)
			buf = strconv.AppendQuote(buf, e.target)
		default:
			buf = append(buf, "- -"...)
		}
		buf = append(buf, ' ')
		if needsQuote(e.path) {
			buf = strconv.AppendQuote(buf, e.path)
		} else {
			buf = append(buf, e.path...)
		}
		buf = append(buf, '\n')
		if len(buf) > 60<<10 {
			h.Write(buf)
			if keep {
				kept = append(kept, buf...)
			}
			buf = buf[:0]
		}
	}
	h.Write(buf)
	if keep {
		kept = append(kept, buf...)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, kept
}

// needsQuote reports whether a listing path must be written quoted.
func needsQuote(p string) bool {
	if strings.HasPrefix(p, `"`) {
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return true
		}
	}
	return false
}

func sumDigest(sum [sha256.Size]byte) Digest {
	return Digest(Algorithm + ":" + hex.EncodeToString(sum[:]))
}

// digestSum is the inverse of sumDigest.
func digestSum(d Digest) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h, ok := strings.CutPrefix(string(d), Algorithm+":")
	if !ok || len(h) != 2*sha256.Size {
		return sum, fmt.Errorf("digest %q: not %s", d, Algorithm)
	}
	_, err := hex.Decode(sum[:], []byte(h))
	return sum, err
}

// realRoot returns root as an absolute path with symbolic links resolved,
// and its lstat data, checking it is a directory.
func realRoot(root string) (string, fileStat, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fileStat{}, &fs.PathError{Op: "abs", Path: root, Err: err}
	}
	hops := 0
	real, st, err := resolveLink("/", abs, &hops)
	if err != nil {
		return "", fileStat{}, err
	}
	if st.kind != 'd' {
		return "", fileStat{}, &fs.PathError{Op: "walk", Path: root, Err: syscall.ENOTDIR}
	}
	return real, st, nil
}
