package build

import (
	"crypto/sha256"
	"hash"
	"path/filepath"
	"slices"
	"strings"
)

// treeWorker walks directories taken from the shared queue and hashes the
// files in them.
type treeWorker struct {
	w      *treeWalk
	h      hash.Hash
	buf    []byte // file read buffer, allocated on first use
	sum    [sha256.Size]byte
	dirent []byte
	names  []string
	out    []dirResult
	hashed int
}

func (wk *treeWorker) run() {
	w := wk.w
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.busy > 0 && w.err == nil {
			w.cond.Wait()
		}
		if w.err != nil || len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		t := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		w.busy++
		w.mu.Unlock()

		sub, err := wk.dir(t)

		w.mu.Lock()
		w.busy--
		if err != nil && w.err == nil {
			w.err = err
		}
		w.queue = append(w.queue, sub...)
		if len(sub) > 0 || w.busy == 0 || err != nil {
			w.cond.Broadcast()
		}
		w.mu.Unlock()
	}
}

// dir walks the directory t: it records its entries, hashing the files
// the cache cannot vouch for, and returns the directories to walk next.
func (wk *treeWorker) dir(t dirTask) ([]dirTask, error) {
	w := wk.w
	old := w.old[t.rel]
	d, opened, names, err := wk.dirNames(t, old)
	if err != nil {
		return nil, err
	}
	if opened {
		defer d.close()
	}
	wk.names = names

	// While every entry equals the cached one at the same index, nothing
	// is copied; rec is made at the first difference.
	var rec *dirRecord
	same := old != nil && old.key == t.st.key
	n := 0
	j := 0
	var sub []dirTask
	for _, name := range names {
		var st fileStat
		if opened {
			st, err = d.lstat(name, t.real)
		} else {
			st, err = lstatPath(joinReal(t.real, name))
		}
		if err != nil {
			return nil, err
		}
		if (st.kind == 'd' || st.kind == 'l') && w.skip[name] {
			// A link by a skipped name is left out as the directory is
			// (a node_modules linked to a shared install is a dependency
			// tree of its own, not code to walk again).
			continue
		}
		var prev *kidRecord
		if old != nil {
			for j < len(old.kids) && old.kids[j].name < name {
				j++
			}
			if j < len(old.kids) && old.kids[j].name == name {
				prev = &old.kids[j]
			}
		}
		if st.kind == 'f' && w.skipFiles != nil && w.skipFiles[relPath(t.rel, name)] {
			continue
		}
		if st.kind == 'f' && w.only != nil && !w.only[name] && !w.only[strings.ToLower(filepath.Ext(name))] {
			continue
		}
		if st.kind == 'o' && w.only != nil {
			continue // a socket or a pipe is no code
		}
		var k kidRecord
		var fresh bool
		if k, sub, fresh, err = wk.kid(t, d, opened, name, st, prev, sub); err != nil {
			return nil, err
		}
		if same && !fresh && n < len(old.kids) && old.kids[n].equal(&k) {
			n++
			continue
		}
		if rec == nil {
			rec = &dirRecord{key: t.st.key, kids: make([]kidRecord, n, len(names))}
			if old != nil {
				copy(rec.kids, old.kids[:n])
			}
		}
		same = false
		rec.kids = append(rec.kids, k)
		n++
	}
	if same && n == len(old.kids) {
		rec = old
	} else if rec == nil {
		same = false
		rec = &dirRecord{key: t.st.key}
		if old != nil {
			rec.kids = slices.Clone(old.kids[:n])
		}
	}
	wk.out = append(wk.out, dirResult{rel: t.rel, rec: rec, same: same})
	return sub, nil
}

// byPathMax is the most entries a trusted directory may have for the walk
// to lstat them by path rather than open the directory: an open and a
// close cost more than the kernel's walk of the path for one entry, less
// for two or more (a sixth of node_modules' directories hold one entry).
const byPathMax = 1

// dirNames returns the sorted names in the directory t. When the cached
// record old vouches for t's stat data, no entry was created, removed or
// renamed, and the names are the cached ones; otherwise the directory is
// read. Either way it is opened (a trusted one only as the base of the *at
// calls, openStatDir), so that its entries are lstat'ed relative to it
// rather than by a path the kernel walks again for each (a quarter of a
// warm walk's system time); the caller must close d when opened is set. A
// trusted directory of at most byPathMax entries, or that cannot be
// opened, is walked by path.
func (wk *treeWorker) dirNames(t dirTask, old *dirRecord) (d dirHandle, opened bool, names []string, err error) {
	names = wk.names[:0]
	if old != nil && wk.w.trusted(old.key, t.st) {
		for i := range old.kids {
			names = append(names, old.kids[i].name)
		}
		if len(names) <= byPathMax {
			return d, false, names, nil
		}
		if d, err := openStatDir(t.real); err == nil {
			return d, true, names, nil
		}
		return d, false, names, nil
	}
	if d, err = openDir(t.real); err != nil {
		return d, false, nil, err
	}
	if names, err = d.readNames(names, &wk.dirent, t.real); err != nil {
		d.close()
		return d, false, nil, err
	}
	slices.Sort(names)
	return d, true, names, nil
}

// kid records the entry name of directory t with lstat data st and cached
// record prev (nil if none). d is t opened, if opened is set. A directory
// to walk is appended to sub. fresh reports that a file or link was read
// rather than taken from prev. An entry the cache vouches for costs no
// path string.
func (wk *treeWorker) kid(t dirTask, d dirHandle, opened bool, name string, st fileStat, prev *kidRecord, sub []dirTask) (k kidRecord, _ []dirTask, fresh bool, err error) {
	w := wk.w
	k = kidRecord{name: name, kind: st.kind, key: st.key}
	// at names the entry for h: by name in d, else by its real path.
	at := func() (h dirHandle, at, real string) {
		real = joinReal(t.real, name)
		if !opened {
			return atCWD(), real, real
		}
		return d, name, real
	}
	switch st.kind {
	case 'd':
		sub = append(sub, dirTask{rel: relPath(t.rel, name), real: joinReal(t.real, name), st: st, roots: t.roots})
	case 'f':
		if prev != nil && prev.kind == 'f' && w.trusted(prev.key, st) {
			k.sum = prev.sum
		} else {
			h, at, real := at()
			if err := wk.hash(h, at, real, st.key.size, &k.sum); err != nil {
				return k, nil, false, err
			}
			fresh = true
		}
	case 'l':
		if prev != nil && prev.kind == 'l' && w.trusted(prev.key, st) {
			k.target = prev.target
		} else {
			h, at, real := at()
			if k.target, err = h.readlink(at, real); err != nil {
				return k, nil, false, err
			}
			fresh = true
		}
		s, ext, extFresh, err := wk.follow(t, relPath(t.rel, name), k.target, prev)
		if err != nil {
			return k, nil, false, err
		}
		if s != nil {
			k.descend = true
			sub = append(sub, *s)
		}
		k.ext = ext
		fresh = fresh || extFresh
	}
	return k, sub, fresh, nil
}

// hash sets *sum to the SHA-256 of the first size bytes of the regular
// file name in d.
func (wk *treeWorker) hash(d dirHandle, name, real string, size int64, sum *[sha256.Size]byte) error {
	if wk.buf == nil {
		wk.buf = make([]byte, 1<<20)
	}
	if _, err := d.hashFile(name, real, size, wk.h, wk.buf); err != nil {
		return err
	}
	// Summed into the worker's own array and copied: a pointer into the
	// caller's record handed to the hash.Hash would move every record
	// the walk makes, hashed or not, to the heap.
	*sum = [sha256.Size]byte(wk.h.Sum(wk.sum[:0]))
	wk.hashed++
	return nil
}

// relPath is the tree path of the entry name of the directory at tree path
// dir ("" for the root).
func relPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
